"""The `Backend` record and the lookup from an array's type to its backend."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, overload

from numpy import ndarray as _ndarray

from ..errors import DongjingError

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

    from ..types import DTypeLike, Number

__all__ = ["Backend", "backend_of", "default_backend", "for_device_type", "is_array",
           "random_types", "register", "registered", "unregister", "write_into"]


_SCALAR_CACHE_SIZE = 256


@dataclass(eq=False)
class Backend:
    """One array library as dongjing sees it.

    `xp` is a NumPy-compatible namespace (ufuncs by name, ``asarray``, ``zeros``, ...) that op
    forwards are written against; `array_types` are the array classes this backend owns (the
    first is the one it creates). The methods below are the services the tape, the runtime and
    the compiler passes need, so none of them calls an array library directly.

    `device_type` is the `dj.device` type its arrays live on ("cpu" for NumPy, "cuda" for CuPy);
    a backend with several devices gives `index_fn` (an array's device index), `device_fn`
    (a context manager making an index current), `current_fn` and `count_fn`.
    `random_types` are the library's own random generator classes (a user's draws on them are
    side effects a `dj.jit` trace reports).
    """

    name: str
    xp: Any
    array_types: tuple[type, ...]
    rng_factory: Callable[[int | None], Any] | None = None
    to_numpy_fn: Callable[[Any], Any] | None = None
    device_type: str = "cpu"
    index_fn: Callable[[Any], int] | None = None
    device_fn: Callable[[int], Any] | None = None
    current_fn: Callable[[], int] | None = None
    count_fn: Callable[[], int] | None = None
    sync_fn: Callable[[int | None], None] | None = None
    scatter_add_fn: Callable[[Any, Any, Any], None] | None = None
    multi_device: bool = False  # more than one device: ops check and select the array's device
    random_types: tuple[type, ...] = ()
    capturing_fn: Callable[[], bool] | None = None  # a CUDA graph is being captured now
    # op name -> this backend's own forward for it, used by eager dispatch in place of the
    # op's `xp` forward (same arguments and result; e.g. CuPy's matmul through cuBLAS)
    forwards: dict[str, Callable[..., Any]] = field(default_factory=dict)

    def owns(self, value: object) -> bool:
        """True when `value` is an array of this backend."""
        return isinstance(value, self.array_types)

    def asarray(self, value: object, dtype: DTypeLike | None = None) -> Any:
        """`value` (an array of any backend, a scalar or a nested list) as this backend's array."""
        if not self.owns(value):
            other = backend_of(value, None)
            if other is not None and other is not self:
                value = other.to_numpy(value)
        return self.xp.asarray(value, dtype=dtype)

    def scalar(self, value: np.ndarray) -> Any:
        """The NumPy 0-d array `value` (a CPU scalar beside this backend's tensors, as in
        ``x * 0.9``) as this backend's 0-d array, copied to the device once per device, dtype
        and value rather than once per op (an eager step reuses the same few numbers)."""
        key = (self.current_index(), value.dtype, value.tobytes())
        cache = self.__dict__.setdefault("_scalars", {})
        found = cache.get(key)
        if found is None:
            ids = self.__dict__.setdefault("_scalar_ids", set())
            if len(cache) >= _SCALAR_CACHE_SIZE:  # numbers that keep changing: start over
                cache.clear()
                ids.clear()
            found = cache[key] = self.xp.asarray(value)
            ids.add(id(found))
        return found

    def is_cached_scalar(self, array: object) -> bool:
        """Whether `array` is one of `scalar`'s shared arrays (never handed out to be written)."""
        return id(array) in self.__dict__.get("_scalar_ids", ())

    def run_forward(self, op: Any, arrays: Sequence[Any], attrs: dict[str, Any]) -> Any:
        """`op`'s forward on `arrays` (this backend's, and NumPy 0-d CPU scalars, which are
        used as their cached device copies): the backend's own forward for the op where it
        has one (`forwards`), else the op's `xp` forward; a NumPy-bound op runs on the host."""
        if op.impl is None and op.ufunc_name is None:  # NumPy-bound (`register`): via the host
            host = [self.to_numpy(a) if self.owns(a) else a for a in arrays]
            out = op.forward(*host, **attrs)
            if isinstance(out, tuple):  # control ops give a tuple of values
                return tuple(None if v is None else self.asarray(v) for v in out)
            return self.asarray(out)
        for a in arrays:
            if not self.owns(a):  # a CPU scalar beside device arrays: its cached device copy
                arrays = [a if self.owns(a) else self.scalar(a)
                          if type(a) is _ndarray and a.ndim == 0 else self.asarray(a)
                          for a in arrays]
                break
        own = self.forwards.get(op.name) if self.forwards else None
        out = (own or op.forward_for(self.xp))(*arrays, **attrs)
        if type(out) is not tuple and self.is_cached_scalar(out):
            out = out.copy()  # the result is a shared scalar itself: the caller gets its own
        return out

    def array(self, value: object, dtype: DTypeLike | None = None) -> Any:
        """A new array holding a copy of `value` (own storage, never a view)."""
        return self.xp.array(self.asarray(value), dtype=dtype, copy=True)

    def empty(self, shape: Sequence[int], dtype: DTypeLike) -> Any:
        """An uninitialised array."""
        return self.xp.empty(shape, dtype=dtype)

    def zeros(self, shape: Sequence[int], dtype: DTypeLike) -> Any:
        """An array of zeros."""
        return self.xp.zeros(shape, dtype=dtype)

    def ones(self, shape: Sequence[int], dtype: DTypeLike) -> Any:
        """An array of ones."""
        return self.xp.ones(shape, dtype=dtype)

    def full(self, shape: Sequence[int], value: Number, dtype: DTypeLike) -> Any:
        """An array filled with `value`."""
        return self.xp.full(shape, value, dtype=dtype)

    def broadcast_scalar(self, value: Number, dtype: DTypeLike, shape: Sequence[int]) -> Any:
        """A read-only broadcast view of the scalar `value` with `shape` (one element stored)."""
        return self.xp.broadcast_to(self.xp.asarray(value, dtype=dtype), shape)

    def add_into(self, target: object, value: object) -> None:
        """``target += value`` in place (gradient accumulation)."""
        self.xp.add(target, value, out=target)

    def scatter_add(self, target: object, index: object, values: object) -> None:
        """``target[index] += values`` with repeated indices summed (unbuffered)."""
        if self.scatter_add_fn is not None:
            self.scatter_add_fn(target, index, values)
        else:
            self.xp.add.at(target, index, values)

    def copy_into(self, target: object, value: object) -> None:
        """``target[...] = value`` in place, casting as needed (optimizer and state updates)."""
        self.xp.copyto(target, value, casting="unsafe")

    def from_dlpack(self, obj: object) -> Any:
        """An array of this backend sharing memory with the DLPack exporter `obj`."""
        return self.xp.from_dlpack(obj)

    # --- devices --------------------------------------------------------------------------------
    def index_of(self, array: object) -> int | None:
        """The device index `array` lives on (None for the CPU)."""
        if self.index_fn is not None:
            return self.index_fn(array)
        return None if self.device_type == "cpu" else 0

    def current_index(self) -> int | None:
        """The device index new arrays go to when none is named (None for the CPU)."""
        if self.current_fn is not None:
            return self.current_fn()
        return None if self.device_type == "cpu" else 0

    def device_count(self) -> int:
        """How many devices this backend can use."""
        return 1 if self.count_fn is None else self.count_fn()

    def using(self, index: int | None) -> contextlib.AbstractContextManager[object]:
        """A context manager under which new arrays and kernels go to device `index`."""
        if self.device_fn is None or index is None:
            return contextlib.nullcontext()
        return self.device_fn(index)

    def move(self, array: object, index: int | None = None) -> Any:
        """`array` (of any backend) as an array of this backend on device `index` (itself when
        it is there already; otherwise a copy)."""
        if self.owns(array):
            if index is None or self.index_of(array) == index:
                return array
            with self.using(index):  # another device of this backend
                return array.copy()
        with self.using(index):
            return self.asarray(array)

    def capturing(self) -> bool:
        """Whether work is being recorded into a graph on the current stream (then nothing
        may read device values on the host)."""
        return self.capturing_fn is not None and self.capturing_fn()

    def synchronize(self, index: int | None = None) -> None:
        """Wait for the work queued on device `index` (the current one when None)."""
        if self.sync_fn is not None:
            self.sync_fn(index)

    def to_numpy(self, array: object) -> np.ndarray:
        """`array` as a NumPy array (a copy when the data lives elsewhere)."""
        return array if self.to_numpy_fn is None else self.to_numpy_fn(array)

    def generator(self, seed: int | None = None) -> Any:
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


# device type or array module -> a function registering that backend on first demand (or None
# when its library is missing); filled by the backend modules (backends/cupy.py: "cuda", "cupy")
_LOADERS: dict[str, Callable[[], Backend | None]] = {}


def register_loader(name: str, load: Callable[[], Backend | None]) -> None:
    """Load a backend the first time device type or array module `name` is asked for."""
    _LOADERS[name] = load


def unregister(backend: Backend) -> None:
    """Forget `backend` (the reverse of `register`; tests that add a backend for a while)."""
    if backend in _BACKENDS:
        _BACKENDS.remove(backend)
    for kind in [k for k, b in _BY_TYPE.items() if b is backend]:
        del _BY_TYPE[kind]


def for_device_type(kind: str) -> Backend | None:
    """The registered backend whose arrays live on devices of type `kind` ("cpu", "cuda"); the
    CuPy backend is loaded on first demand for "cuda". None when there is none."""
    for backend in _BACKENDS:
        if backend.device_type == kind:
            return backend
    load = _LOADERS.get(kind)
    return None if load is None else load()


def registered() -> tuple[Backend, ...]:
    """All known backends, the default first."""
    return tuple(_BACKENDS)


def default_backend() -> Backend:
    """The backend new tensors get when nothing says otherwise (NumPy)."""
    return _BACKENDS[0]


_MISSING = object()
_D = TypeVar("_D")


@overload
def backend_of(array: object) -> Backend: ...
@overload
def backend_of(array: object, default: _D) -> Backend | _D: ...


def backend_of(array: object, default: Any = _MISSING) -> Backend | Any:
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
    load = _LOADERS.get(type(array).__module__.partition(".")[0])
    if load is not None:
        found = load()  # e.g. CuPy arrays before anything asked for "cuda"
        if found is not None and found.owns(array):
            _BY_TYPE[type(array)] = found
            return found
    if default is not _MISSING:
        return default
    if hasattr(array, "shape") and hasattr(array, "dtype"):
        raise DongjingError(f"no dongjing backend owns arrays of type {type(array).__name__}")
    return default_backend()


def write_into(target: object, value: object, casting: str = "unsafe") -> None:
    """``target[...] = value`` in place, on `target`'s backend; an array `value` of another
    device is moved to `target`'s device first (in-place ops, initialisers, state updates)."""
    backend = backend_of(target)
    if not backend.owns(value) and is_array(value):
        value = backend.move(value, backend.index_of(target))
    backend.xp.copyto(target, value, casting=casting)


def random_types() -> tuple[type, ...]:
    """The random generator classes of every registered backend's library."""
    return tuple(t for b in _BACKENDS for t in b.random_types)


def is_array(value: object) -> bool:
    """True when `value` is an array (not a scalar) of some registered backend."""
    return any(isinstance(value, b.array_types[0]) for b in _BACKENDS)
