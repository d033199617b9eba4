"""Finite-difference checking of analytic gradients, in float64.

The inputs may live on any backend; the comparison itself runs on the host (NumPy copies)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..backends import backend_of, numpy_backend
from ..dtypes import is_floating
from ..errors import DongjingError
from ..tensor import Tensor

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from ..tensor import Tensor

xp = numpy_backend.xp  # the host namespace the comparison runs in


class GradcheckError(DongjingError, AssertionError):
    """Analytic and numerical gradients differ."""


def _as_float64(inputs):
    out = []
    for x in inputs:
        if isinstance(x, Tensor) and is_floating(x.dtype):
            out.append(Tensor._make(x._data.astype(xp.float64), x.requires_grad))
        else:
            out.append(x)
    return out


def _scalar_fn(fn, inputs, weights):
    """sum(fn(*inputs) * weights) over every output (a random projection of the outputs)."""
    outs = fn(*inputs)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    total = None
    for out, w in zip(outs, weights):
        term = (out * w).sum()
        total = term if total is None else total + term
    return total


def gradcheck(fn: Callable[..., Tensor | Sequence[Tensor]], inputs: Iterable[Tensor],
              eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              seed: int = 0) -> bool:
    """Compare analytic gradients of `fn` at `inputs` with central differences, in float64.

    Inputs that require grad are checked; the outputs are projected on fixed random weights so
    every output element takes part. Raises GradcheckError naming the worst element.
    """
    inputs = _as_float64(list(inputs))
    probe = fn(*inputs)
    probe = probe if isinstance(probe, (tuple, list)) else (probe,)
    rng = numpy_backend.generator(seed)
    weights = [Tensor._make(backend_of(o._data).asarray(rng.standard_normal(o.shape)))
               for o in probe]
    checked = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not checked:
        raise GradcheckError("gradcheck: no input requires grad")
    for x in inputs:
        if isinstance(x, Tensor):
            x.grad = None
    _scalar_fn(fn, inputs, weights).backward()
    for i in checked:
        x = inputs[i]
        analytic = (xp.zeros(x.shape) if x.grad is None
                    else backend_of(x.grad._data).to_numpy(x.grad._data).astype(xp.float64))
        numeric = xp.zeros(x.shape)
        flat = x._data.reshape(-1)
        for j in range(flat.size):
            orig = flat[j].copy()  # a GPU array's flat[j] is a view of the element
            flat[j] = orig + eps
            plus = float(_scalar_fn(fn, inputs, weights)._data)
            flat[j] = orig - eps
            minus = float(_scalar_fn(fn, inputs, weights)._data)
            flat[j] = orig
            numeric.reshape(-1)[j] = (plus - minus) / (2 * eps)
        err = xp.abs(analytic - numeric) - (atol + rtol * xp.abs(numeric))
        if err.size and err.max() > 0:
            k = int(xp.argmax(err))
            idx = xp.unravel_index(k, x.shape) if x.shape else ()
            raise GradcheckError(
                f"gradcheck: input {i} (shape {x.shape}) differs at index {idx}: analytic "
                f"{analytic.reshape(-1)[k]:.8g} vs numerical {numeric.reshape(-1)[k]:.8g} "
                f"(atol={atol}, rtol={rtol})"
            )
    return True
