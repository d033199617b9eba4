"""TF1 dtype names (`tf.float32`, `"float"`, `"double"`, ...) and TF's conversion of Python
values (Python floats -> float32, Python ints -> int32; NumPy arrays keep their dtype)."""

from __future__ import annotations

import numpy as np

from ... import dtypes as _dj
from ...errors import DTypeError
from ...tensor import Tensor

float16 = half = np.dtype("float16")
float32 = np.dtype("float32")
float64 = double = np.dtype("float64")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
bool = np.dtype("bool")  # noqa: A001  (TF's name)

_NAMES = {
    "float": float32, "float16": float16, "half": float16, "float32": float32,
    "float64": float64, "double": float64, "int8": int8, "int16": int16, "int32": int32,
    "int64": int64, "uint8": uint8, "bool": bool,
}


def as_dtype(dtype) -> np.dtype:
    """A dtype from a TF1 spelling: `tf.float32`, `"float"` (float32), `"double"`, NumPy types."""
    if isinstance(dtype, str):
        found = _NAMES.get(dtype)
        if found is None:
            raise DTypeError(f"dtype {dtype!r} is not a TensorFlow dtype that dongjing.compat.v1 "
                             f"provides (one of {', '.join(sorted(_NAMES))})")
        return found
    try:
        result = _dj.as_dtype(dtype)
    except TypeError:
        raise DTypeError(f"{dtype!r} is not a dtype") from None
    if result.kind not in "biuf":
        raise DTypeError(f"dtype {result} is not provided by dongjing.compat.v1 (numbers and "
                         "bools only)")
    if dtype is int:  # TF's Python int is int32
        return int32
    return result


def to_array(value, dtype=None) -> np.ndarray:
    """`value` as an array the way TF1 converts it (Python ints -> int32, floats -> float32)."""
    want = None if dtype is None else as_dtype(dtype)
    if isinstance(value, Tensor):
        value = value._value("a TensorFlow constant")
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
    else:
        array = np.asarray(value)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        elif array.dtype.kind == "i":
            array = array.astype(np.int32)
    if array.dtype.kind not in "biuf":
        raise DTypeError(f"cannot make a TensorFlow tensor of dtype {array.dtype}")
    if want is not None and array.dtype != want:
        if array.dtype.kind == "f" and want.kind in "iub" and np.any(array != np.round(array)):
            raise DTypeError(f"value {value!r} cannot be converted to {want} without loss "
                             "(TensorFlow refuses it too)")
        array = array.astype(want)
    return array
