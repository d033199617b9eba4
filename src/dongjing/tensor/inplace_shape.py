"""PyTorch's in-place shape methods (`unsqueeze_`, `squeeze_`, `transpose_`, `t_`): the tensor
itself takes the new shape, over the same memory, and its version counter moves.

Only untracked tensors: while gradients are recorded for the tensor (it or its base requires
grad) the history would have to be rewritten, which is refused with a clear error, as is a
tensor that is, or has, a view (their shared layout would no longer match) and a symbolic one.
"""

from __future__ import annotations

from .. import ops
from ..autograd import views as _views
from ..autograd.grad_mode import no_grad
from ..autograd.provenance import note_modified
from . import Tensor


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


def unsqueeze_(self, dim: int):
    """`unsqueeze(dim)` in place: this tensor gains a size-1 dim at `dim`."""
    return _reshape_in_place(self, "unsqueeze_", lambda s: ops.unsqueeze(s, dim))


def squeeze_(self, dim=None):
    """`squeeze(dim)` in place: this tensor loses its size-1 dims (or `dim`, when size 1)."""
    return _reshape_in_place(self, "squeeze_", lambda s: ops.squeeze(s, dim))


def transpose_(self, dim0: int, dim1: int):
    """`transpose(dim0, dim1)` in place."""
    return _reshape_in_place(self, "transpose_", lambda s: ops.transpose(s, dim0, dim1))


def t_(self):
    """`t()` in place: a 2-d tensor's two dims swapped (0-d and 1-d stay as they are)."""
    return _reshape_in_place(self, "t_", lambda s: s if s.ndim < 2 else ops.transpose(s, 0, 1))


def attach() -> None:
    """Install the methods on Tensor."""
    for fn in (unsqueeze_, squeeze_, transpose_, t_):
        setattr(Tensor, fn.__name__, fn)
