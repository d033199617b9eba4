"""dtype names and promotion (PyTorch's category rules: bool < int < float)."""

from __future__ import annotations

import numpy as np

from .errors import DTypeError

float32 = np.dtype("float32")
float64 = np.dtype("float64")
float16 = np.dtype("float16")
int64 = np.dtype("int64")
int32 = np.dtype("int32")
int16 = np.dtype("int16")
uint8 = np.dtype("uint8")
bool_ = np.dtype("bool")

try:  # bfloat16 comes from ml_dtypes (the NumPy dtype JAX uses); optional: `pip install ml_dtypes`
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - exercised only where ml_dtypes is missing
    _ml_dtypes = None
bfloat16 = np.dtype(_ml_dtypes.bfloat16) if _ml_dtypes is not None else None
"""`dj.bfloat16`: None when the `ml_dtypes` package is not installed (see `require_bfloat16`)."""

LOW_PRECISION = tuple(d for d in (float16, bfloat16) if d is not None)
"""The 16-bit floating dtypes: ops compute on them in float32 and round the result once."""

default_float = float32

_SHORT = {
    float16: "f16",
    **({bfloat16: "bf16"} if bfloat16 is not None else {}),
    float32: "f32",
    float64: "f64",
    int32: "i32",
    int64: "i64",
    bool_: "bool",
    np.dtype("uint8"): "u8",
    np.dtype("int8"): "i8",
    np.dtype("int16"): "i16",
}


def short_name(dtype: np.dtype) -> str:
    """`f32`, `i64`, ... as printed in graph text."""
    return _SHORT.get(np.dtype(dtype), np.dtype(dtype).name)


def is_floating(dtype: np.dtype) -> bool:
    """Whether `dtype` is a floating dtype (bfloat16 included: NumPy files it under kind "V")."""
    return dtype.kind == "f" or dtype is bfloat16


def missing_attribute(name: str):
    """A package's `__getattr__` for `bfloat16` when ml_dtypes is missing (raises its error)."""
    if name == "bfloat16":
        require_bfloat16()
    raise AttributeError(f"module 'dongjing' has no attribute {name!r}")


def is_low_precision(dtype) -> bool:
    """Whether `dtype` is float16 or bfloat16."""
    return dtype in LOW_PRECISION


def require_bfloat16() -> np.dtype:
    """`bfloat16`, or a DTypeError saying how to get it when `ml_dtypes` is missing."""
    if bfloat16 is None:
        raise DTypeError("bfloat16 needs the ml_dtypes package (NumPy has no bfloat16): "
                         "pip install ml_dtypes (or dongjing[amp])")
    return bfloat16


def is_integer(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


def as_dtype(dtype) -> np.dtype:
    """Normalise `dj.float32`, `np.float32`, `"float32"`, `float`, `bool` ... to a NumPy dtype."""
    if dtype is None:
        raise TypeError("expected a dtype, got None")
    if dtype is float:
        return float32
    if dtype is int:
        return int64
    if dtype is bool:
        return bool_
    if isinstance(dtype, str) and dtype.rsplit(".", 1)[-1] == "bfloat16":
        return require_bfloat16()
    try:
        found = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{dtype!r} is not a dtype") from None
    # strings, objects, dates: never a tensor of them
    if found.kind not in "biuf" and found is not bfloat16:
        raise DTypeError(f"{dtype!r} is not a dtype of tensors (tensors hold bools, integers "
                         f"and floating point numbers; got NumPy's {found})")
    return found


_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2}


def _category(dtype: np.dtype) -> int:
    return 2 if dtype is bfloat16 else _CATEGORY.get(dtype.kind, 3)


def promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """Result dtype of a binary op: the higher category wins whole (int64 + float32 -> float32);
    bfloat16 with float16 gives float32, as in PyTorch (neither holds the other)."""
    if a is b or a == b:
        return a
    ca, cb = _category(a), _category(b)
    if ca > cb:
        return a
    if cb > ca:
        return b
    if ca == 2 and (a is bfloat16 or b is bfloat16):
        other = b if a is bfloat16 else a
        return float32 if other.itemsize <= 2 else other
    return np.promote_types(a, b)


def promote_operands(a: np.dtype, a_ndim: int, b: np.dtype, b_ndim: int) -> np.dtype:
    """Result dtype of a binary op on two tensors, with PyTorch's rule for 0-d tensors: a 0-d
    operand beside a dimensioned one of the same or a lower category does not raise its dtype
    (float32 [n] with float64 [] -> float32, int32 [n] with int64 [] -> int32); one of a
    higher category promotes as usual (int32 [n] with float64 [] -> float64)."""
    if (a_ndim == 0) == (b_ndim == 0):
        return promote(a, b)
    shaped, zero_d = (a, b) if b_ndim == 0 else (b, a)
    if _category(shaped) >= _category(zero_d):
        return shaped
    return promote(a, b)


def scalar_dtype(value, like: np.dtype | None) -> np.dtype:
    """dtype of a Python scalar used beside a tensor of dtype `like` (weak scalar typing)."""
    if isinstance(value, bool):
        return like if like is not None else bool_
    if isinstance(value, int):
        return like if like is not None and like.kind != "b" else int64
    if isinstance(value, float):
        return like if like is not None and is_floating(like) else default_float
    raise TypeError(f"expected a Python number, got {type(value).__name__}")


def holds_every_value(small, big) -> bool:
    """Whether every value of dtype `small` converts to `big` and back unchanged (np.can_cast
    calls int64 -> float64 "safe", but 2**53 + 1 does not survive it)."""
    small, big = np.dtype(small), np.dtype(big)
    if small.kind == "b":
        return big.kind in "biuf" or big is bfloat16
    if small.kind in "iu" and big.kind in "iu":
        return np.can_cast(small, big, "safe")
    if small.kind in "iu" and big.kind == "f":
        return small.itemsize * 8 - (small.kind == "i") <= np.finfo(big).nmant + 1
    if small is bfloat16 or big is bfloat16:
        return small == big or (small is bfloat16 and is_floating(big) and big.itemsize > 2)
    if small.kind == "f" and big.kind == "f":
        return big.itemsize >= small.itemsize
    return False


def can_cast(from_dtype, to_dtype, casting: str = "safe") -> bool:
    """Whether values of `from_dtype` may be cast to `to_dtype` under NumPy's `casting` rule
    ("no", "equiv", "safe", "same_kind", "unsafe")."""
    return bool(np.can_cast(np.dtype(from_dtype), np.dtype(to_dtype), casting))


def finfo(dtype):
    """Limits of a floating dtype: ``.max``, ``.min`` (lowest finite), ``.eps``, ``.tiny``."""
    dtype = np.dtype(dtype)
    if dtype is bfloat16:
        return _ml_dtypes.finfo(dtype)
    return np.finfo(dtype)


def is_dtype(value) -> bool:
    """Whether `value` is a dtype object (not a name or a scalar type; see `is_scalar_type`)."""
    return isinstance(value, np.dtype)


def is_scalar_type(value) -> bool:
    """Whether `value` is an array library's scalar type (`np.float32`, `np.int64`, ...), which
    stands for its dtype."""
    return isinstance(value, type) and issubclass(value, np.generic)


def is_scalar_number(value) -> bool:
    """Whether `value` is one number: a Python int/float or an array library's numeric scalar
    (bools excluded, as PyTorch's number arguments exclude them)."""
    return isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_))


def is_integer_scalar(value) -> bool:
    """Whether `value` is a Python int or an array library's integer scalar (bools included,
    as Python counts them)."""
    return isinstance(value, (int, np.integer))


FLOAT_SCALARS = (float, np.floating)
"""Python and NumPy floating scalar types (attribute values the compiler compares)."""

ARRAY_SCALARS = np.generic
"""The array library's scalar type (a 0-d value that is not a Python number)."""


_LEGACY_TYPES = {
    "Float": float32, "Double": float64, "Half": float16, "Long": int64, "Int": int32,
    "Short": int16, "Char": np.dtype("int8"), "Byte": uint8, "Bool": bool_,
    **({"BFloat16": bfloat16} if bfloat16 is not None else {}),
}
_LEGACY_NAMES = {dtype: name for name, dtype in _LEGACY_TYPES.items()}


def legacy_type_name(dtype: np.dtype) -> str:
    """PyTorch's type string of a CPU tensor of `dtype` (`"torch.FloatTensor"`)."""
    name = _LEGACY_NAMES.get(np.dtype(dtype))
    if name is None:
        raise DTypeError(f"{dtype} has no PyTorch type string")
    return f"torch.{name}Tensor"


def from_type_name(text: str) -> np.dtype:
    """The dtype of a type string: PyTorch's `"torch.DoubleTensor"` (or `"DoubleTensor"`), or a
    dtype's name (`"float64"`, `"torch.float64"`, `"dongjing.float64"`); DTypeError otherwise."""
    base = text.rsplit(".", 1)[-1]
    if base.endswith("Tensor") and base[: -len("Tensor")] in _LEGACY_TYPES:
        if ".cuda." in text:
            raise DTypeError(f"type({text!r}): CUDA type strings are not supported; use "
                             ".to('cuda') and a dtype")
        return _LEGACY_TYPES[base[: -len("Tensor")]]
    try:
        return as_dtype(base)
    except TypeError:
        raise DTypeError(f"type({text!r}): not a type string (expected e.g. "
                         "'torch.FloatTensor', 'torch.LongTensor' or a dtype name such as "
                         "'float64')") from None
