"""More PyTorch Tensor methods: the compositions of `ops.torch_compat_*` as methods, and the
small queries PyTorch code asks a tensor (`type_as`, `element_size`, `stride`, ...)."""

from __future__ import annotations

from typing import overload

from .. import ops
from ..core import infer
from ..dtypes import is_floating
from ..types import TensorLike
from . import Tensor

# method name -> function of (self, ...): PyTorch has each as a Tensor method
_COMPOSED = ("square", "rsqrt", "reciprocal", "clamp_min", "clamp_max", "lerp", "frac",
             "nan_to_num", "allclose", "equal", "addmm", "diag", "trace", "movedim", "moveaxis",
             "swapaxes", "swapdims", "cross", "diff", "unique",
             "masked_select", "unflatten", "index_add", "take_along_dim")


def repeat_interleave(self: Tensor, repeats: TensorLike, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """`dj.repeat_interleave(self, repeats, dim)`: PyTorch's method needs `repeats`."""
    return ops.repeat_interleave(self, repeats, dim, output_size=output_size)


def type_as(self: Tensor, other: Tensor) -> Tensor:
    """This tensor in `other`'s dtype (itself when they already agree)."""
    return self.to(other.dtype)


def element_size(self: Tensor) -> int:
    """Bytes per element."""
    return int(self.dtype.itemsize)


def nelement(self: Tensor) -> int:
    """The number of elements (an alias of `numel`)."""
    return self.numel()


def ndimension(self: Tensor) -> int:
    """The number of dims (an alias of `dim`)."""
    return self.ndim


def is_floating_point(self: Tensor) -> bool:
    """Whether the dtype is a floating point one."""
    return is_floating(self.dtype)


@overload
def stride(self: Tensor, dim: None = None) -> tuple[int, ...]: ...
@overload
def stride(self: Tensor, dim: int) -> int: ...


def stride(self: Tensor, dim: int | None = None) -> tuple[int, ...] | int:
    """The step in elements between neighbours along each dim (a tuple), or along `dim`."""
    data = self._value("Tensor.stride()")
    steps = tuple(s // data.itemsize for s in data.strides)
    if dim is None:
        return steps

    return steps[infer.normalize_dim("Tensor.stride", dim, self.ndim)]


def attach() -> None:
    """Install the methods on Tensor."""
    for name in _COMPOSED:
        setattr(Tensor, name, getattr(ops, name))
    for fn in (type_as, element_size, nelement, ndimension, is_floating_point, stride,
               repeat_interleave):
        setattr(Tensor, fn.__name__, fn)
