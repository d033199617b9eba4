"""Tensor operators and PyTorch-style methods, each a thin call into `dongjing.ops`."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, overload

from .. import ops
from ..core.memory_format import check_memory_format, preserve_format
from ..core.registry import OPS, is_inplace_name, on_bind
from ..core.torch_args import as_method
from ..ops.bindings import reflected
from . import Tensor
from . import factories as _new_methods
from . import format_methods as _format_methods
from . import inplace as _inplace_methods
from . import inplace_methods as _inplace_extras
from . import torch_methods as _compat_methods
from . import torch_methods_more as _more_methods
from .transfer import parse_target, to_device

if TYPE_CHECKING:
    from ..types import DeviceLike, DTypeLike, TensorLike


def _sizes_method(name: str, fn, param: str, listed_variadic: bool = True):
    """`t.view(2, 3)` or `t.view((2, 3))`: the method calling `fn(t, sizes)`. Its signature
    lists `*param` (PyTorch's `Tensor.view(*shape)`), or `param` where PyTorch documents one
    argument (`Tensor.flip(dims)`, which also takes them one by one)."""

    def method(self, *sizes):
        return fn(self, ops.shape.sizes_argument(sizes))

    kind = inspect.Parameter.VAR_POSITIONAL if listed_variadic else \
        inspect.Parameter.POSITIONAL_OR_KEYWORD
    method.__name__ = method.__qualname__ = name
    method.__doc__ = fn.__doc__
    method.__signature__ = inspect.Signature([
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter(param, kind, annotation="int | Sequence[int]")],
        return_annotation="Tensor")
    return method


def _attach_sizes_methods() -> None:
    for name, fn, param, variadic in (
            ("reshape", ops.reshape, "shape", True), ("view", ops.reshape, "shape", True),
            ("permute", ops.permute, "dims", True), ("flip", ops.flip, "dims", False),
            ("tile", ops.tile, "dims", False)):
        setattr(Tensor, name, _sizes_method(name, fn, param, variadic))


def relu(self: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0); `inplace=True` writes it into this tensor (as `relu_`)."""
    return self.relu_() if inplace else ops.relu(self)


def _method_forms() -> None:
    """Every function attached as a method, in its method form (see `as_method`)."""
    for name, value in list(vars(Tensor).items()):
        if not name.startswith("__") and inspect.isfunction(value):
            setattr(Tensor, name, as_method(name, value))


_REFLECTED = {"__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rpow__", "__rmatmul__"}


def _attach_op_methods(op) -> None:
    """Every name `op` declares in `methods` becomes a Tensor method calling its binding (an
    in-place name, `tanh_` or `__imul__`, one writing the result into the tensor)."""
    if op.binding is None:
        return
    for name in op.methods:
        if is_inplace_name(name):
            setattr(Tensor, name, _inplace_methods.inplace_method(op, name))
        else:
            setattr(Tensor, name, reflected(op.binding) if name in _REFLECTED
                    else op.binding if name.startswith("__") else as_method(name, op.binding))


for _op in OPS.values():
    _attach_op_methods(_op)
on_bind(_attach_op_methods)  # ops declared later (dj.ops.define after import) get theirs too
Tensor.__matmul__ = ops.matmul
Tensor.__rmatmul__ = reflected(ops.matmul)


def _positive(self: Tensor) -> Tensor:
    return self


Tensor.__pos__ = _positive
Tensor.__getitem__ = ops.getitem

# compositions (no op record of their own declares them); primitives get theirs from `methods=`
_METHODS = {
    "mm": ops.mm, "dot": ops.dot, "mean": ops.mean, "var": ops.var, "max": ops.max,
    "min": ops.min, "transpose": ops.transpose, "flatten": ops.flatten, "softmax": ops.softmax,
    "logsumexp": ops.logsumexp,
}
for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)


def _where_method(self: Tensor, condition: TensorLike, other: TensorLike) -> Tensor:
    return ops.where(condition, self, other)


def _expand_as(self: Tensor, other: Tensor) -> Tensor:
    return ops.broadcast_to_like(self, other)


def _reshape_as(self: Tensor, other: Tensor) -> Tensor:
    return ops.reshape_like(self, other)


Tensor.where = _where_method
Tensor.expand_as = _expand_as
Tensor.view_as = _reshape_as
Tensor.reshape_as = _reshape_as


# --- the class's own methods that run an op ----------------------------------------------------
def _transposed(self: Tensor) -> Tensor:
    return ops.permute(self, tuple(range(self.ndim - 1, -1, -1)))


def detach(self: Tensor) -> Tensor:
    """A tensor with the same data that is cut off from the tape."""
    if self._node is not None:
        return ops.stop_gradient(self)
    t = Tensor._make(self._data, False)
    t._version = self._version
    return t


@overload
def to(self: Tensor, dtype: DTypeLike, *, non_blocking: bool = False, copy: bool = False,
       memory_format: object = ...) -> Tensor: ...
@overload
def to(self: Tensor, device: DeviceLike | None = None, dtype: DTypeLike | None = None, *,
       non_blocking: bool = False, copy: bool = False, memory_format: object = ...) -> Tensor: ...
@overload
def to(self: Tensor, other: Tensor, *, non_blocking: bool = False, copy: bool = False
       ) -> Tensor: ...


def to(self: Tensor, *args: object, **kwargs: object) -> Tensor:
    """`to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other)`: this tensor on that
    device in that dtype (itself when nothing changes; a move is recorded on the tape).
    `memory_format=`: as `Tensor.contiguous` honours it (channels-last layouts are refused)."""
    dev, dtype = parse_target("Tensor.to", args, kwargs)
    fmt = kwargs.get("memory_format", preserve_format)
    check_memory_format("Tensor.to", fmt)
    out = self
    if dev is not None:
        out = to_device(out, dev)
    if dtype is not None:
        out = ops.cast(out, dtype)
    out = out.clone() if kwargs.get("copy") and out is self else out
    return _format_methods.in_format(out, "to", fmt, self)


Tensor.T = property(_transposed)
Tensor.detach = detach
Tensor.to = to


# --- in-place (inplace.py) ------------------------------------------------------------------
_inplace_methods.attach()
_new_methods.attach()

# --- more PyTorch names (torch_methods.py, inplace_methods.py) --------------------------
_compat_methods.attach()
_inplace_extras.attach()
_more_methods.attach()
_format_methods.attach()
_method_forms()
_attach_sizes_methods()
Tensor.relu = relu
