"""The `Backend` record and the lookup from an array's type to its backend."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import DongjingError

__all__ = ["Backend", "backend_of", "default_backend", "is_array", "register", "registered"]


@dataclass(eq=False)
class Backend:
    """One array library as dongjing sees it.

    `xp` is a NumPy-compatible namespace (ufuncs by name, ``asarray``, ``zeros``, ...) that op
    forwards are written against; `array_types` are the array classes this backend owns (the
    first is the one it creates). The methods below are the services the tape, the runtime and
    the compiler passes need, so none of them calls an array library directly.
    """

    name: str
    xp: Any
    array_types: tuple
    rng_factory: Callable[[int | None], Any] | None = None
    to_numpy_fn: Callable[[Any], Any] | None = None

    def owns(self, value) -> bool:
        """True when `value` is an array of this backend."""
        return isinstance(value, self.array_types)

    def asarray(self, value, dtype=None):
        """`value` (an array of any backend, a scalar or a nested list) as this backend's array."""
        if not self.owns(value):
            other = backend_of(value, None)
            if other is not None and other is not self:
                value = other.to_numpy(value)
        return self.xp.asarray(value, dtype=dtype)

    def array(self, value, dtype=None):
        """A new array holding a copy of `value` (own storage, never a view)."""
        return self.xp.array(self.asarray(value), dtype=dtype, copy=True)

    def empty(self, shape, dtype):
        """An uninitialised array."""
        return self.xp.empty(shape, dtype=dtype)

    def zeros(self, shape, dtype):
        """An array of zeros."""
        return self.xp.zeros(shape, dtype=dtype)

    def ones(self, shape, dtype):
        """An array of ones."""
        return self.xp.ones(shape, dtype=dtype)

    def full(self, shape, value, dtype):
        """An array filled with `value`."""
        return self.xp.full(shape, value, dtype=dtype)

    def broadcast_scalar(self, value, dtype, shape):
        """A read-only broadcast view of the scalar `value` with `shape` (one element stored)."""
        return self.xp.broadcast_to(self.xp.asarray(value, dtype=dtype), shape)

    def add_into(self, target, value) -> None:
        """``target += value`` in place (gradient accumulation)."""
        self.xp.add(target, value, out=target)

    def scatter_add(self, target, index, values) -> None:
        """``target[index] += values`` with repeated indices summed (unbuffered)."""
        self.xp.add.at(target, index, values)

    def to_numpy(self, array):
        """`array` as a NumPy array (a copy when the data lives elsewhere)."""
        return array if self.to_numpy_fn is None else self.to_numpy_fn(array)

    def generator(self, seed: int | None = None):
        """A new random generator of this backend seeded with `seed` (NumPy's Generator API)."""
        if self.rng_factory is None:
            raise DongjingError(f"backend {self.name!r} has no random number generator")
        return self.rng_factory(seed)

    def __repr__(self) -> str:
        return f"Backend({self.name!r})"


_BACKENDS: list[Backend] = []
_BY_TYPE: dict[type, Backend] = {}


def register(backend: Backend, *, default: bool = False) -> Backend:
    """Make `backend` known to `backend_of`; `default=True` makes it the default."""
    if default:
        _BACKENDS.insert(0, backend)
    else:
        _BACKENDS.append(backend)
    for kind in backend.array_types:
        _BY_TYPE[kind] = backend
    return backend


def registered() -> tuple[Backend, ...]:
    """All known backends, the default first."""
    return tuple(_BACKENDS)


def default_backend() -> Backend:
    """The backend new tensors get when nothing says otherwise (NumPy)."""
    return _BACKENDS[0]


_MISSING = object()


def backend_of(array, default: Any = _MISSING) -> Backend:
    """The backend owning `array` (by its type); scalars and lists give the default backend.

    An array-like of an unknown library raises `DongjingError` unless `default` is given.
    """
    found = _BY_TYPE.get(type(array))
    if found is not None:
        return found
    for backend in _BACKENDS:
        if backend.owns(array):
            _BY_TYPE[type(array)] = backend
            return backend
    if default is not _MISSING:
        return default
    if hasattr(array, "shape") and hasattr(array, "dtype"):
        raise DongjingError(f"no dongjing backend owns arrays of type {type(array).__name__}")
    return default_backend()


def is_array(value) -> bool:
    """True when `value` is an array (not a scalar) of some registered backend."""
    return any(isinstance(value, b.array_types[0]) for b in _BACKENDS)
