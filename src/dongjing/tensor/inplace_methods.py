"""More of PyTorch's in-place Tensor methods, through the machinery of `tensor_inplace`.

Arithmetic ones (`square_`, `lerp_`, `masked_fill_`, `index_add_`, `scatter_`, ...) compute
their value with `dongjing.ops` and go through `run_inplace`, so they bump the version
counter, write through views and are recorded for backward (or refused on a leaf that requires
grad) exactly as `add_` is. Random fills (`bernoulli_`, `exponential_`) follow `uniform_`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import ops
from ..autograd import views as _views
from ..autograd.grad_mode import no_grad
from ..autograd.provenance import note_modified
from ..dtypes import is_floating
from ..errors import DTypeError, ShapeError
from . import Tensor
from .inplace import _constant, _generator, _tensors, _unary_inplace, run_inplace

if TYPE_CHECKING:
    from ..types import Dim, Number, TensorLike


def square_(self: Tensor) -> Tensor:
    """`self * self` in place."""
    return run_inplace(self, "square_", ops.square)


def clamp_min_(self: Tensor, min: TensorLike) -> Tensor:
    """`max(self, min)` in place (see `dj.clamp_min`)."""
    return run_inplace(self, "clamp_min_", lambda s: ops.clamp_min(s, min), _tensors(min))


def clamp_max_(self: Tensor, max: TensorLike) -> Tensor:
    """`min(self, max)` in place (see `dj.clamp_max`)."""
    return run_inplace(self, "clamp_max_", lambda s: ops.clamp_max(s, max), _tensors(max))


def lerp_(self: Tensor, end: TensorLike, weight: TensorLike) -> Tensor:
    """`self + weight * (end - self)` in place (see `dj.lerp`)."""
    return run_inplace(self, "lerp_", lambda s: ops.lerp(s, end, weight), _tensors(end, weight))


def masked_fill_(self: Tensor, mask: TensorLike, value: TensorLike) -> Tensor:
    """Set the elements where the bool `mask` (broadcast to this shape) is true to `value`."""
    return run_inplace(self, "masked_fill_", lambda s: ops.masked_fill(s, mask, value),
                       _tensors(mask, value))


def index_add_(self: Tensor, dim: int, index: TensorLike, source: TensorLike, *,
               alpha: Number = 1) -> Tensor:
    """Add ``alpha * source`` at the 1-d `index` along `dim` in place (repeats add up)."""
    return run_inplace(self, "index_add_",
                       lambda s: ops.index_add(s, dim, index, source, alpha=alpha),
                       _tensors(index, source))


def scatter_(self: Tensor, dim: int, index: TensorLike, src: TensorLike | None = None, *,
             value: Number | None = None, reduce: str | None = None) -> Tensor:
    """Write `src` (a tensor, or a number given as `src` or `value`) at ``index`` along `dim`
    in place (see `dj.scatter`; ``reduce="add"`` adds)."""
    return run_inplace(self, "scatter_",
                       lambda s: ops.scatter(s, dim, index, src, value=value, reduce=reduce),
                       _tensors(index, src))


def scatter_add_(self: Tensor, dim: int, index: TensorLike, src: TensorLike) -> Tensor:
    """Add `src` at ``index`` along `dim` in place (see `dj.scatter_add`)."""
    return run_inplace(self, "scatter_add_", lambda s: ops.scatter_add(s, dim, index, src),
                       _tensors(index, src))


def _probability(name: str, p, shape) -> np.ndarray:
    if isinstance(p, Tensor):
        p = p._value(f"{name}(p)")
    elif isinstance(p, bool) or not isinstance(p, (int, float, np.number)):
        raise DTypeError(f"{name}: p must be a number or a tensor, got {type(p).__name__}")
    p = np.asarray(p, dtype=np.float64)
    if p.size and ((p < 0).any() or (p > 1).any() or np.isnan(p).any()):
        raise ShapeError(f"{name}: p must lie in [0, 1]")
    try:
        return np.broadcast_to(p, shape)
    except ValueError:
        raise ShapeError(f"{name}: p of shape {p.shape} does not broadcast to {shape}") from None


def bernoulli_(self: Tensor, p: float | Tensor = 0.5, *, generator: None = None) -> Tensor:
    """Fill with 0/1 draws that are 1 with probability `p` (a number or a tensor broadcast to
    this shape), from dongjing's seeded generator."""
    rng = _generator(generator, "bernoulli_")
    probs = _probability("bernoulli_", p, self.shape)
    return run_inplace(self, "bernoulli_",
                       lambda s: _constant(s, rng.random(s.shape) < probs), symbolic=False)


def exponential_(self: Tensor, lambd: float = 1.0, *, generator: None = None) -> Tensor:
    """Fill with draws of the exponential distribution of rate `lambd` (> 0)."""
    rng = _generator(generator, "exponential_")
    if not is_floating(self.dtype):
        raise DTypeError(f"exponential_: expects a floating point tensor, got {self.dtype}")
    if isinstance(lambd, bool) or not isinstance(lambd, (int, float, np.number)) or lambd <= 0:
        raise ShapeError(f"exponential_: lambd must be a number > 0, got {lambd!r}")
    return run_inplace(self, "exponential_",
                       lambda s: _constant(s, rng.exponential(1.0 / lambd, s.shape)),
                       symbolic=False)


# --- in-place shape changes (unsqueeze_, squeeze_, transpose_, t_) -----------------------
# The tensor itself takes the new shape over the same memory. Only untracked tensors: while
# gradients are recorded for it the history would have to be rewritten (refused, clearly), as
# is a tensor that is or has a view (their shared layout would no longer match).
def _reshape_in_place(t: Tensor, name: str, compute) -> Tensor:
    if t._node is not None:
        raise RuntimeError(f"{name} on a symbolic tensor: use the out-of-place "
                           f"{name[:-1]}() and rebind the name")
    _views.check_inplace(t, name)  # a leaf that requires grad: refused as PyTorch refuses it
    if _views.tracked(t):
        raise _views.InplaceError(
            f"{name} on a tensor whose gradient is recorded (shape {t.shape}) is not supported; "
            f"use x = x.{name[:-1]}(...) instead")
    if t._view_of is not None or _views.live_views(t):
        raise _views.InplaceError(
            f"{name} on a tensor that is a view or has views (shape {t.shape}) is not "
            f"supported; use x = x.{name[:-1]}(...) instead")
    with no_grad():
        t._data = compute(t)._data  # a view of the same memory in the new shape
    t._version[0] += 1
    note_modified(t, name)
    return t


def unsqueeze_(self: Tensor, dim: int) -> Tensor:
    """`unsqueeze(dim)` in place: this tensor gains a size-1 dim at `dim`."""
    return _reshape_in_place(self, "unsqueeze_", lambda s: ops.unsqueeze(s, dim))


def squeeze_(self: Tensor, dim: Dim = None) -> Tensor:
    """`squeeze(dim)` in place: this tensor loses its size-1 dims (or `dim`, when size 1)."""
    return _reshape_in_place(self, "squeeze_", lambda s: ops.squeeze(s, dim))


def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """`transpose(dim0, dim1)` in place."""
    return _reshape_in_place(self, "transpose_", lambda s: ops.transpose(s, dim0, dim1))


def t_(self: Tensor) -> Tensor:
    """`t()` in place: a 2-d tensor's two dims swapped (0-d and 1-d stay as they are)."""
    return _reshape_in_place(self, "t_", lambda s: s if s.ndim < 2 else ops.transpose(s, 0, 1))


def attach() -> None:
    """Install the methods on Tensor."""
    for fn in (square_, clamp_min_, clamp_max_, lerp_, masked_fill_, index_add_, scatter_,
               scatter_add_, bernoulli_, exponential_, unsqueeze_, squeeze_, transpose_, t_):
        setattr(Tensor, fn.__name__, fn)
    for name in ("reciprocal", "rsqrt", "frac"):
        setattr(Tensor, name + "_", _unary_inplace(name + "_", getattr(ops, name)))
