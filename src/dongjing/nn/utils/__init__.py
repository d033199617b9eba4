"""`dj.nn.utils`: gradient clipping (`clip_grad_norm_`, `clip_grad_value_`) and parameter
flattening, written with dongjing ops so a `dj.jit`-traced train step clips too."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ... import ops
from ...autograd.grad_mode import no_grad
from ...backends import write_into
from ...tensor import Tensor


def _params(parameters) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    return list(parameters)


def _scale_grad(p: Tensor, factor: Tensor) -> None:
    """grad *= factor: in place on an eager gradient (as PyTorch), rebound while tracing."""
    g = p.grad
    scaled = ops.cast(g * factor, g.dtype)
    if g._node is None and scaled._node is None:
        write_into(g._data, scaled._data, casting="same_kind")
        g._version[0] += 1
    else:
        p.grad = scaled


def clip_grad_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Scale all gradients together so their joint `norm_type` norm is at most `max_norm`;
    returns the norm before clipping."""
    grads = [p for p in _params(parameters) if p.grad is not None]
    if not grads:
        return Tensor._make(np.zeros((), np.float32))
    norm_type = float(norm_type)
    with no_grad():
        if norm_type == float("inf"):
            norms = [ops.amax(ops.abs(p.grad)) for p in grads]
            total = norms[0] if len(norms) == 1 else ops.amax(ops.stack(norms))
        else:
            parts = [ops.sum(ops.pow(ops.abs(p.grad), norm_type)) if norm_type != 2 else
                     ops.sum(p.grad * p.grad) for p in grads]
            summed = parts[0]
            for part in parts[1:]:
                summed = summed + part
            total = ops.sqrt(summed) if norm_type == 2 else ops.pow(summed, 1.0 / norm_type)
        if error_if_nonfinite and total._node is None and not np.isfinite(total._data):
            raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} of the "
                               "gradients is non-finite, so it cannot be clipped")
        factor = ops.clip(float(max_norm) / (total + 1e-6), None, 1.0)
        for p in grads:
            _scale_grad(p, factor)
    return total


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float,
                     foreach=None) -> None:
    """Clamp every gradient element into [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _params(parameters):
            g = p.grad
            if g is None:
                continue
            clipped = ops.clip(g, -clip_value, clip_value)
            if g._node is None and clipped._node is None:
                write_into(g._data, clipped._data, casting="same_kind")
                g._version[0] += 1
            else:
                p.grad = clipped


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated into one vector."""
    return ops.concat([ops.reshape(p, (-1,)) for p in parameters], 0)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of `vec` into the parameters, in place."""
    offset = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(ops.reshape(vec[offset:offset + n], p.shape))
            offset += n
