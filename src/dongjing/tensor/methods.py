"""Tensor operators and PyTorch-style methods, each a thin call into `dongjing.ops`."""

from __future__ import annotations

from .. import ops
from ..core.registry import OPS, is_inplace_name, on_bind
from . import Tensor
from . import factories as _new_methods
from . import inplace as _inplace_methods
from . import inplace_methods as _inplace_extras
from . import torch_methods as _compat_methods
from .transfer import parse_target, to_device

_REFLECTED = {"__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rpow__", "__rmatmul__"}


def _reflected(fn):
    def method(self, other):
        return fn(other, self)

    method.__name__ = f"reflected_{fn.__name__}"
    return method


def _attach_op_methods(op) -> None:
    """Every name `op` declares in `methods` becomes a Tensor method calling its binding (an
    in-place name, `tanh_` or `__imul__`, one writing the result into the tensor)."""
    if op.binding is None:
        return
    for name in op.methods:
        if is_inplace_name(name):
            setattr(Tensor, name, _inplace_methods.inplace_method(op, name))
        else:
            setattr(Tensor, name, _reflected(op.binding) if name in _REFLECTED else op.binding)


for _op in OPS.values():
    _attach_op_methods(_op)
on_bind(_attach_op_methods)  # ops declared later (dj.ops.define after import) get theirs too
Tensor.__matmul__ = ops.matmul
Tensor.__rmatmul__ = _reflected(ops.matmul)
Tensor.__pos__ = lambda self: self
Tensor.__getitem__ = ops.getitem

# compositions (no op record of their own declares them); primitives get theirs from `methods=`
_METHODS = {
    "mm": ops.mm, "dot": ops.dot, "mean": ops.mean, "var": ops.var, "max": ops.max,
    "min": ops.min, "transpose": ops.transpose, "flatten": ops.flatten, "softmax": ops.softmax,
    "logsumexp": ops.logsumexp,
}
for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)


def _where_method(self, condition, other):
    return ops.where(condition, self, other)


def _expand_as(self, other):
    return ops.broadcast_to_like(self, other)


def _reshape_as(self, other):
    return ops.reshape_like(self, other)


Tensor.where = _where_method
Tensor.expand_as = _expand_as
Tensor.view_as = _reshape_as
Tensor.reshape_as = _reshape_as


# --- the class's own methods that run an op ----------------------------------------------------
def _transposed(self) -> Tensor:
    return ops.permute(self, tuple(range(self.ndim - 1, -1, -1)))


def detach(self) -> Tensor:
    """A tensor with the same data that is cut off from the tape."""
    if self._node is not None:
        return ops.stop_gradient(self)
    t = Tensor._make(self._data, False)
    t._version = self._version
    return t


def clone(self) -> Tensor:
    return ops.clone(self)


def to(self, *args, **kwargs) -> Tensor:
    """`to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other)`: this tensor on that
    device in that dtype (itself when nothing changes; a move is recorded on the tape)."""
    dev, dtype = parse_target("Tensor.to", args, kwargs)
    out = self
    if dev is not None:
        out = to_device(out, dev)
    if dtype is not None:
        out = ops.cast(out, dtype)
    return out.clone() if kwargs.get("copy") and out is self else out


Tensor.T = property(_transposed)
Tensor.detach = detach
Tensor.clone = clone
Tensor.to = to


# --- in-place (inplace.py) ------------------------------------------------------------------
_inplace_methods.attach()
_new_methods.attach()

# --- more PyTorch names (torch_methods.py, inplace_methods.py) --------------------------
_compat_methods.attach()
_inplace_extras.attach()
