"""More of PyTorch's top-level tensor functions: `as_tensor`, `is_tensor`, `numel`,
`empty_like`, `is_floating_point`, and the random draws `normal` and `bernoulli`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes, ops
from ..autograd.grad_mode import state
from ..core.memory_format import check_layout, check_memory_format, preserve_format
from ..core.torch_args import unlisted_keywords
from ..core.validation import check_size
from ..devices.device import check_device, placement
from ..devices.random import generator
from ..dtypes import is_floating
from ..errors import ArgumentError, DTypeError, GraphError, ShapeError
from . import Tensor
from .creation import from_numpy, tensor
from .out_argument import write_out

if TYPE_CHECKING:
    from ..types import TensorLike


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """`data` as a Tensor, sharing memory where it can: a Tensor of that dtype comes back
    itself, a NumPy array of that dtype is shared (as `from_numpy`); anything else is copied
    (as `dj.tensor`); `device=` puts it there (a copy when it lives elsewhere)."""
    where = None if device is None else check_device(device, "dj.as_tensor", placed=True)
    if isinstance(data, Tensor):
        data = data if where is None else data.to(where)
        return data if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray) and (dtype is None or dtypes.as_dtype(dtype) == data.dtype) \
            and (where is None or where.type == "cpu"):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=where)


def is_tensor(obj) -> bool:
    """Whether `obj` is a dongjing Tensor."""
    return isinstance(obj, Tensor)


def numel(input) -> int:
    """The number of elements of the tensor `input`."""
    if not isinstance(input, Tensor):
        raise ArgumentError(f"dj.numel: expects a Tensor, got {type(input).__name__}")
    return input.numel()


def is_floating_point(input) -> bool:
    """Whether the tensor `input` has a floating point dtype."""
    if not isinstance(input, Tensor):
        raise ArgumentError(f"dj.is_floating_point: expects a Tensor, got "
                            f"{type(input).__name__}")
    return is_floating(input.dtype)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
               memory_format=preserve_format) -> Tensor:
    """An uninitialised tensor of `input`'s shape (dtype and device, unless `dtype=` /
    `device=` say otherwise; row-major, `layout` strided only)."""
    check_device(device, "dj.empty_like", placed=True)
    if not isinstance(input, Tensor):
        raise ArgumentError(f"dj.empty_like: expects a Tensor, got {type(input).__name__}")
    check_layout("dj.empty_like", layout)
    check_memory_format("dj.empty_like", memory_format)
    if input._node is not None:
        return ops.zeros_like(input, dtype)
    want = input.dtype if dtype is None else dtypes.as_dtype(dtype)
    where = placement(input.device if device is None else device, "dj.empty_like")
    t = Tensor._make(where.call("empty", input.shape, want))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _check_generator(name: str, gen) -> None:
    if gen is not None:
        raise NotImplementedError(f"{name}: generator= is not supported; seed the global "
                                  "generator with dj.manual_seed")


def _eager(name: str, *values) -> None:
    for v in values:
        if isinstance(v, Tensor) and v._node is not None:
            raise GraphError(f"{name}: sampling from a symbolic tensor is not supported; draw "
                             "the samples eagerly and feed them")


def _zero_gradient_to(sample: Tensor, *sources) -> Tensor:
    """`sample`, joined to the tape so that each source that requires grad gets a zero
    gradient from it (PyTorch's rule for normal and bernoulli) instead of none."""
    if not state.grad_enabled:
        return sample
    for src in sources:
        if isinstance(src, Tensor) and src.requires_grad:
            always = Tensor._make(np.ones(sample.shape, dtype=bool))
            sample = ops.where(always, sample, ops.cast(src, sample.dtype))
    return sample


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """Samples of N(mean, std^2): `mean` and `std` numbers or (broadcast) floating tensors; with
    two numbers, `size` gives the shape. The gradient to a `mean`/`std` that requires grad is
    zero, as in PyTorch (the draw is not reparameterized)."""
    _check_generator("dj.normal", generator)
    check_device(device, "dj.normal")
    _eager("dj.normal", mean, std)
    tensors = [v for v in (mean, std) if isinstance(v, Tensor)]
    if not tensors:
        if size is None:
            raise ArgumentError("dj.normal: with a number mean and std, give size=")
        shape = check_size("dj.normal", tuple(size) if isinstance(size, (tuple, list))
                           else (size,))
        want = dtypes.default_float if dtype is None else dtypes.as_dtype(dtype)
    else:
        if size is not None or dtype is not None or requires_grad:
            raise ArgumentError("dj.normal: size=, dtype= and requires_grad= are only for a "
                                "number mean and std (with tensors the result takes their "
                                "shape and dtype)")
        for t in tensors:
            if not is_floating(t.dtype):
                raise DTypeError(f"dj.normal: mean and std must be floating point, got {t.dtype}")
        want = np.result_type(*(t.dtype for t in tensors))
        shape = np.broadcast_shapes(*(np.shape(_array(v)) for v in (mean, std)))
    m, s = _array(mean), _array(std)
    if np.any(s < 0) or np.any(np.isnan(s)):
        raise ShapeError("dj.normal: std must be >= 0")
    z = _rng().standard_normal(shape)
    out = Tensor._make(np.asarray(m + s * z).astype(want))
    out = _zero_gradient_to(out, *tensors)
    if requires_grad:
        out.requires_grad_(True)
    return out


def bernoulli(input: TensorLike, p: float | None = None, *, generator: None = None,
              out: Tensor | None = None) -> Tensor:
    """0/1 draws, 1 with probability `input` (a floating tensor of values in [0, 1]), or with
    probability `p` (a number) in `input`'s shape; the result has `input`'s dtype. `out=` (as
    PyTorch, only without `p`) receives the draws."""
    if out is not None:
        if p is not None:
            raise ArgumentError("dj.bernoulli: out= is taken without p (as PyTorch's overloads)")
        return write_out("dj.bernoulli", bernoulli(input, generator=generator), out)
    _check_generator("dj.bernoulli", generator)
    _eager("dj.bernoulli", input)
    x = input if isinstance(input, Tensor) else tensor(input)
    if not is_floating(x.dtype):
        raise DTypeError(f"dj.bernoulli: expects a floating point tensor, got {x.dtype}")
    probs = x._data if p is None else p
    if isinstance(probs, bool) or not isinstance(probs, (int, float, np.number, np.ndarray)):
        raise DTypeError(f"dj.bernoulli: p must be a number, got {type(probs).__name__}")
    probs = np.asarray(probs, dtype=np.float64)
    if probs.size and ((probs < 0).any() or (probs > 1).any() or np.isnan(probs).any()):
        raise ShapeError("dj.bernoulli: probabilities must lie in [0, 1]")
    out = Tensor._make((_rng().random(x.shape) < probs).astype(x.dtype))
    return _zero_gradient_to(out, x)


def _array(value):
    return value._data if isinstance(value, Tensor) else np.asarray(value, dtype=np.float64)


def _rng():
    return generator()


def clone(input, *, memory_format=preserve_format, out=None) -> Tensor:
    """A copy of `input` with its own (row-major) memory, on the tape; `memory_format` as
    `Tensor.clone` takes it."""
    check_memory_format("dj.clone", memory_format)
    return ops.clone(input, out=out)


# PyTorch's torch.clone has no out=; dongjing's has taken it, so it stays accepted, unlisted
clone = unlisted_keywords(clone, "out")
