"""User data (scalars, nested lists, NumPy or other arrays, Tensors) to arrays, with
PyTorch's default dtypes."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core.validation import allocation_failed
from ..devices.device import foreign_array
from ..dtypes import is_floating
from ..errors import ArgumentError, DTypeError


class _NoTensorYet:
    pass


# dongjing.Tensor, set by the package once the class exists (the class is built on this module)
tensor_type: type = _NoTensorYet


def legacy_array(args: tuple, dtype) -> np.ndarray:
    """The array of a legacy constructor call: `Tensor(2, 3)` (zeros of those sizes),
    `Tensor(data)`, `Tensor(data, dtype)`."""
    if not args or all(type(a) is int for a in args):
        want = dtypes.float32 if dtype is None else dtypes.as_dtype(dtype)
        if any(a < 0 for a in args):
            raise ValueError(f"Tensor{args}: sizes must be non-negative")
        try:
            return np.zeros(args or (0,), dtype=want)
        except (MemoryError, ValueError) as exc:
            found = allocation_failed("Tensor()", f"an array of shape {args}", exc)
            if found is None:
                raise
            raise found from None
    if len(args) == 2 and dtype is None and type(args[1]) is not int:
        return to_array(args[0], args[1])
    if len(args) != 1:
        raise TypeError(
            f"Tensor(): takes one data argument or integer sizes, got {len(args)} arguments"
        )
    data = args[0]
    if dtype is None and isinstance(data, (list, tuple)):
        dtype = dtypes.float32
    return to_array(data, dtype)


def to_array(data, dtype=None) -> np.ndarray:
    """Convert user data to an array with PyTorch's defaults (floats -> float32, ints -> int64)."""
    if isinstance(data, tensor_type):
        data = data._value("dj.tensor()")
    want = None if dtype is None else dtypes.as_dtype(dtype)
    if type(data) is not np.ndarray and hasattr(data, "dtype") and not isinstance(
            data, np.generic):
        data, on_device = foreign_array(data, want)
        if on_device:
            return data
    if isinstance(data, np.ndarray):
        array = data
    elif isinstance(data, np.generic):
        array = np.asarray(data)
    else:
        try:
            array = np.asarray(data)
        except ValueError as exc:
            raise ValueError(f"cannot make a tensor from this data: {exc}") from None
        if want is not None:  # Python numbers go straight to it: 0.1 as float64, not float32's
            if array.dtype.kind in "iuf" and want.kind in "iu" and array.size:
                _check_fits(array, want)
        elif array.dtype == np.float64:
            array = array.astype(dtypes.default_float)
        elif array.dtype.kind == "i":
            array = array.astype(dtypes.int64)
    if array.dtype.kind not in "biuf":
        raise DTypeError(f"cannot make a tensor of dtype {array.dtype}: only numbers and bools")
    if want is not None and array.dtype != want:
        array = array.astype(want)
    elif array is data:
        array = array.copy()
    return array


def _check_fits(array: np.ndarray, want: np.dtype) -> None:
    """Python numbers that the integer dtype `want` cannot hold raise, as in NumPy 2 and PyTorch
    (never a silent wrap-around); floats that do fit are truncated toward zero, as PyTorch's."""
    info = np.iinfo(want)
    low, high = array.min(), array.max()
    if is_floating(array.dtype) and not (np.isfinite(low) and np.isfinite(high)):
        raise ArgumentError(f"cannot convert NaN or an infinity to dtype {want}")
    if is_floating(array.dtype):  # Python's float against a Python int compares exactly
        low, high = float(low), float(high)
    else:
        low, high = int(low), int(high)
    if low < info.min or high > info.max:
        bad = low if low < info.min else high
        raise ArgumentError(f"the value {bad} does not fit dtype {want} "
                            f"(range {info.min} to {info.max})")
