"""PyTorch's `Tensor.new_*` factories and `Tensor.t()`: new tensors take this tensor's dtype
and device unless `dtype=` / `device=` say otherwise."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes, ops
from ..core.validation import check_size
from ..devices.device import placement
from . import Tensor
from .conversion import to_array

if TYPE_CHECKING:
    from ..types import DeviceLike, DTypeLike, Number, Shape, TensorLike


def _filled(self: Tensor, name: str, size: tuple, fill_value, dtype, device,
            requires_grad) -> Tensor:
    """`fill_value` in a new tensor of `size`, made where it lives (no float64 staging copy);
    sizes are checked and an allocation failure raises OutOfMemoryError naming `name`."""
    func = f"Tensor.{name}"
    shape = check_size(func, size)
    where = placement(self.device if device is None else device, func)
    want = self.dtype if dtype is None else dtypes.as_dtype(dtype)
    t = Tensor._make(where.call("full", shape, fill_value, want))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _new(self: Tensor, name: str, array: np.ndarray, dtype, device, requires_grad) -> Tensor:
    where = placement(self.device if device is None else device, f"Tensor.{name}")
    want = self.dtype if dtype is None else dtypes.as_dtype(dtype)
    t = Tensor._make(where.put(array.astype(want, copy=False)))
    if requires_grad:
        t.requires_grad_(True)
    return t


def new_zeros(self: Tensor, *size: int | Sequence[int], dtype: DTypeLike | None = None,
              device: DeviceLike | None = None, requires_grad: bool = False) -> Tensor:
    """Zeros of `size`, with this tensor's dtype by default."""
    return _filled(self, "new_zeros", size, 0, dtype, device, requires_grad)


def new_ones(self: Tensor, *size: int | Sequence[int], dtype: DTypeLike | None = None,
             device: DeviceLike | None = None, requires_grad: bool = False) -> Tensor:
    """Ones of `size`, with this tensor's dtype by default."""
    return _filled(self, "new_ones", size, 1, dtype, device, requires_grad)


def new_empty(self: Tensor, *size: int | Sequence[int], dtype: DTypeLike | None = None,
              device: DeviceLike | None = None, requires_grad: bool = False) -> Tensor:
    """A tensor of `size` (zero-filled), with this tensor's dtype by default."""
    return _filled(self, "new_empty", size, 0, dtype, device, requires_grad)


def new_full(self: Tensor, size: Shape, fill_value: Number, *, dtype: DTypeLike | None = None,
             device: DeviceLike | None = None, requires_grad: bool = False) -> Tensor:
    """`fill_value` everywhere in `size`, with this tensor's dtype by default."""
    return _filled(self, "new_full", (size,), fill_value, dtype, device, requires_grad)


def new_tensor(self: Tensor, data: TensorLike, *, dtype: DTypeLike | None = None,
               device: DeviceLike | None = None, requires_grad: bool = False) -> Tensor:
    """A copy of `data` (detached), with this tensor's dtype by default."""
    array = to_array(data).copy()
    return _new(self, "new_tensor", array, dtype, device, requires_grad)


def t(self: Tensor) -> Tensor:
    """The transpose of a tensor of at most 2 dims (0-d and 1-d are returned as they are)."""
    if self.ndim > 2:
        raise ValueError(f"t(): expects a tensor of at most 2 dims, got shape {self.shape}; "
                         "use .transpose(dim0, dim1) or .permute")
    return ops.transpose(self, 0, 1) if self.ndim == 2 else self


def attach() -> None:
    """Install the methods on Tensor."""
    for fn in (new_zeros, new_ones, new_empty, new_full, new_tensor, t):
        setattr(Tensor, fn.__name__, fn)
