"""Argument checks shared by the public API: each raises an ArgumentError (a DongjingError that
is also a TypeError and a ValueError) naming the function and the argument."""

from __future__ import annotations

import numbers

import numpy as np

from ..errors import ArgumentError, OutOfMemoryError


def is_int(value) -> bool:
    """A Python or NumPy integer, not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_int(func: str, name: str, value, minimum: int | None = None) -> int:
    """`value` as an int; ArgumentError if it is not an integer or is below `minimum`."""
    if not is_int(value):
        raise ArgumentError(f"{func}: argument '{name}' must be an integer, got "
                            f"{type(value).__name__} {value!r}")
    if minimum is not None and value < minimum:
        raise ArgumentError(f"{func}: argument '{name}' must be >= {minimum}, got {value}")
    return int(value)


def check_size(func: str, size: tuple) -> tuple:
    """A shape given as `*size` (ints, or one tuple/list of them) as a tuple of ints >= 0."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, np.ndarray)):
        size = tuple(size[0])
    for i, d in enumerate(size):
        if not is_int(d):
            raise ArgumentError(f"{func}: argument 'size' must be integers, got "
                                f"{type(d).__name__} {d!r} at position {i}")
        if d < 0:
            raise ArgumentError(f"{func}: argument 'size' must not be negative, got "
                                f"{tuple(int(s) if is_int(s) else s for s in size)}")
    return tuple(int(d) for d in size)


def check_dims(func: str, dim):
    """A reduction's `dim` (None, an integer, or a sequence of integers) with Python ints;
    ArgumentError for anything else."""
    if dim is None:
        return dim
    if is_int(dim):
        return int(dim)
    if isinstance(dim, (tuple, list)) and all(is_int(d) for d in dim):
        return tuple(int(d) for d in dim)
    raise ArgumentError(f"{func}: argument 'dim' must be an int, a tuple of ints or None, got "
                        f"{type(dim).__name__} {dim!r}")


def check_number(func: str, name: str, value, nonzero: bool = False, finite: bool = False):
    """A real scalar (Python/NumPy number or bool; a 0-d array); ArgumentError otherwise (also
    for zero with `nonzero`, and for NaN or an infinity with `finite`)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if not isinstance(value, (numbers.Real, np.bool_)) or isinstance(value, np.timedelta64):
        raise ArgumentError(f"{func}: argument '{name}' must be a real number, got "
                            f"{type(value).__name__} {value!r}")
    if nonzero and value == 0:
        raise ArgumentError(f"{func}: argument '{name}' must not be zero")
    if finite and not np.isfinite(value):
        raise ArgumentError(f"{func}: argument '{name}' must be finite, got {value}")
    return value


def check_choice(func: str, name: str, value, choices: tuple):
    """`value` if it is one of `choices` (compared by type and value), else ArgumentError."""
    if not any(type(value) is type(c) and value == c for c in choices) and not (
            is_int(value) and any(is_int(c) and value == c for c in choices)):
        raise ArgumentError(f"{func}: argument '{name}' must be one of "
                            f"{', '.join(map(repr, choices))}; got {value!r}")
    return int(value) if is_int(value) else value


def fits_integer(array: np.ndarray, dtype: np.dtype) -> bool:
    """Whether every value of integer `array` is representable in integer `dtype`."""
    info = np.iinfo(dtype)
    return not array.size or (int(array.min()) >= info.min and int(array.max()) <= info.max)


def allocation_failed(func: str, what: str, exc: Exception):
    """The dongjing error for an array library's refusal to allocate (`MemoryError`, or NumPy's
    ValueError for a size no array can have), or None for any other exception."""
    if isinstance(exc, MemoryError) or (isinstance(exc, ValueError) and (
            "too big" in str(exc) or "allowed size" in str(exc))):
        return OutOfMemoryError(f"{func}: cannot allocate {what}: {exc}")
    return None
