"""More PyTorch Tensor methods: the compositions of `ops.torch_compat_*` as methods, and the
small queries PyTorch code asks a tensor (`type_as`, `element_size`, `stride`, ...)."""

from __future__ import annotations

from typing import overload

from .. import dtypes, ops
from ..core import infer
from ..dtypes import is_floating
from ..errors import ArgumentError
from . import Tensor

# method name -> function of (self, ...): PyTorch has each as a Tensor method
_COMPOSED = ("square", "rsqrt", "reciprocal", "clamp_min", "clamp_max", "lerp", "frac",
             "nan_to_num", "allclose", "equal", "addmm", "diag", "trace", "movedim", "moveaxis",
             "swapaxes", "swapdims", "cross", "diff", "repeat_interleave", "unique",
             "masked_select", "unflatten", "index_add", "take_along_dim")


def type_as(self: Tensor, other: Tensor) -> Tensor:
    """This tensor in `other`'s dtype (itself when they already agree)."""
    return self.to(other.dtype)


def half(self: Tensor) -> Tensor:
    """This tensor as float16."""
    return self.to(dtypes.float16)


def bfloat16(self: Tensor, memory_format: None = None) -> Tensor:
    """This tensor as bfloat16 (needs the ml_dtypes package)."""
    _check_memory_format("bfloat16", memory_format)
    return self.to(dtypes.require_bfloat16())


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


def _check_memory_format(name: str, memory_format: object) -> None:
    if memory_format is not None:
        raise ArgumentError(f"Tensor.{name}: memory_format={memory_format!r} is not supported "
                            "(dongjing has row-major memory only)")


def is_contiguous(self: Tensor, memory_format: None = None) -> bool:
    """Whether the elements are laid out row-major without gaps (false for some views, such as
    ``t[:, ::2]``; symbolic tensors are always materialized contiguous)."""
    _check_memory_format("is_contiguous", memory_format)
    if self._node is not None:
        return True
    return bool(self._data.flags["C_CONTIGUOUS"])


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
    for fn in (type_as, half, bfloat16, element_size, nelement, ndimension, is_floating_point,
               is_contiguous, stride):
        setattr(Tensor, fn.__name__, fn)
