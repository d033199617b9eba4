"""The Tensor methods that take PyTorch's `memory_format=`: the dtype conversions (`float()`,
`long()`, ...), `clone`, `contiguous`, `is_contiguous`, `cpu` and `cuda`. dongjing's tensors
are row-major, so `preserve_format` and `contiguous_format` are honoured and
`channels_last(_3d)` is refused (see `core.memory_format`); `is_contiguous` answers for every
format from the strides."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import dtypes, ops
from ..core.memory_format import (
    channels_last,
    channels_last_3d,
    check_memory_format,
    contiguous_format,
    is_contiguous_as,
    preserve_format,
)
from ..core.memory_format import memory_format as _format_type
from ..devices.device import device as _device
from . import Tensor

if TYPE_CHECKING:
    from ..types import DeviceLike


def in_format(t: Tensor, name: str, memory_format: object,
              source: Tensor | None = None) -> Tensor:
    """`t` laid out as `memory_format` asks: a row-major copy of a non-contiguous eager tensor
    for `contiguous_format`, `t` itself otherwise. `t` being `source` itself (a conversion that
    changed nothing) stays as it is, as PyTorch returns the tensor itself then."""
    check_memory_format(f"Tensor.{name}", memory_format)
    if memory_format is not contiguous_format or t._node is not None \
            or t._data.flags["C_CONTIGUOUS"]:
        return t
    if t is source and not _channels_last_strided(t):  # PyTorch's aliasing rule
        return t
    return ops.clone(t)


def _channels_last_strided(t: Tensor) -> bool:
    """Whether PyTorch would call `t`'s layout channels-last (so that asking for the
    contiguous format copies it even when nothing else changes)."""
    fmt = {4: channels_last, 5: channels_last_3d}.get(t.ndim)
    return fmt is not None and is_contiguous_as(tuple(t.shape), t.stride(), fmt)


def _conversion(name: str, dtype_of, doc: str):
    def convert(self, memory_format=preserve_format) -> Tensor:
        return in_format(self.to(dtype_of()), name, memory_format, self)

    convert.__name__ = convert.__qualname__ = name
    convert.__doc__ = doc
    return convert


_CONVERSIONS = (
    _conversion("float", lambda: dtypes.float32, "This tensor as float32."),
    _conversion("double", lambda: dtypes.float64, "This tensor as float64."),
    _conversion("half", lambda: dtypes.float16, "This tensor as float16."),
    _conversion("bfloat16", dtypes.require_bfloat16,
                "This tensor as bfloat16 (needs the ml_dtypes package)."),
    _conversion("long", lambda: dtypes.int64, "This tensor as int64."),
    _conversion("int", lambda: dtypes.int32, "This tensor as int32."),
    _conversion("short", lambda: dtypes.int16, "This tensor as int16."),
    _conversion("byte", lambda: dtypes.uint8, "This tensor as uint8."),
    _conversion("bool", lambda: dtypes.bool_, "This tensor as bool."),
)


def clone(self: Tensor, memory_format: object = preserve_format) -> Tensor:
    """A copy with its own memory, on the tape (row-major)."""
    check_memory_format("Tensor.clone", memory_format)
    return ops.clone(self)


def contiguous(self: Tensor, memory_format: object = contiguous_format) -> Tensor:
    """This tensor if its elements are row-major without gaps, else a row-major copy."""
    return in_format(self, "contiguous", contiguous_format if memory_format is
                      preserve_format else memory_format)


def is_contiguous(self: Tensor, memory_format: object = contiguous_format) -> bool:
    """Whether the elements are laid out densely in the order of `memory_format` (row-major
    by default: false for some views, such as ``t[:, ::2]``; symbolic tensors are always
    materialized row-major)."""
    if memory_format is contiguous_format or memory_format is preserve_format:
        return True if self._node is not None else bool(self._data.flags["C_CONTIGUOUS"])
    if self._node is not None:
        return False
    if not isinstance(memory_format, _format_type):
        check_memory_format("Tensor.is_contiguous", memory_format)
    return is_contiguous_as(tuple(self.shape), self.stride(), memory_format)


def cpu(self: Tensor, memory_format: object = preserve_format) -> Tensor:
    """This tensor on the CPU (itself when it lives there already)."""
    return in_format(self.to("cpu"), "cpu", memory_format, self)


def cuda(self: Tensor, device: DeviceLike | None = None, non_blocking: bool = False,
         memory_format: object = preserve_format) -> Tensor:
    """This tensor on a CUDA device (`device`: an index or "cuda:i"; the current one when
    None). DeviceError when dongjing has no CUDA backend here. Copies are synchronous, so
    `non_blocking` changes nothing."""
    check_memory_format("Tensor.cuda", memory_format)
    if device is None or isinstance(device, int):
        device = _device("cuda", device)
    return in_format(self.to(device), "cuda", memory_format, self)


def attach() -> None:
    """Install the methods on Tensor."""
    for fn in (*_CONVERSIONS, clone, contiguous, is_contiguous, cpu, cuda):
        setattr(Tensor, fn.__name__, fn)
