"""A test backend whose arrays are NumPy arrays wrapped in a distinct type, `WArray`.

`WArray` refuses NumPy's protocols (`__array_ufunc__ = None`, `__array_function__` and
`__array__` raise), so any direct `np.` call that reaches one fails loudly; only the backend's
namespace `wrapped_xp` (which mirrors NumPy by unwrapping its arguments and wrapping its
results) and the array's own methods work. Running ops on tensors holding `WArray`s therefore
proves that they reach their array library only through the backend seam.
"""

from __future__ import annotations

import operator
import types

import numpy as np

from dongjing.backends import Backend, register


class LeakError(RuntimeError):
    """A NumPy function was called directly on a wrapped array (it bypassed the backend)."""


def unwrap(value):
    """The NumPy data inside `value` (recursively through lists, tuples and dicts)."""
    if isinstance(value, WArray):
        return value.a
    if type(value) in (list, tuple):
        return type(value)(unwrap(v) for v in value)
    if type(value) is dict:
        return {k: unwrap(v) for k, v in value.items()}
    return value


def wrap(value, cls=None):
    """NumPy arrays and scalars in `value` as `cls` arrays (default `WArray`; 0-d for scalars,
    as CuPy does)."""
    cls = cls or WArray
    if isinstance(value, (np.ndarray, np.generic)):
        return cls(np.asarray(value))
    if type(value) in (list, tuple):
        return type(value)(wrap(v, cls) for v in value)
    return value


def _host_arrays(value) -> bool:
    """Whether `value` holds a NumPy array (of any rank) outside a wrapper."""
    if type(value) is np.ndarray:
        return True
    if type(value) in (list, tuple):
        return any(_host_arrays(v) for v in value)
    if type(value) is dict:
        return any(_host_arrays(v) for v in value.values())
    return False


# CuPy's functions that take host arrays (each a copy to the device)
_TAKES_HOST = frozenset({"asarray", "array", "asanyarray", "ascontiguousarray", "copyto"})


def _check_host(cls, args, kwargs, name) -> None:
    """A device namespace (`cls.refuses_host`) refuses host arrays as CuPy does."""
    if (getattr(cls, "refuses_host", False) and name not in _TAKES_HOST
            and (_host_arrays(args) or _host_arrays(kwargs))):
        raise LeakError(f"{name}: a host (NumPy) array was passed to the device's namespace "
                        "(CuPy raises TypeError for it)")


def _lifted(fn, cls=None):
    def call(*args, **kwargs):
        _check_host(cls, args, kwargs, getattr(fn, "__name__", "function"))
        return wrap(fn(*unwrap(args), **unwrap(kwargs)), cls)

    call.__name__ = getattr(fn, "__name__", "lifted")
    return call


class WArray:
    """A NumPy array in a type NumPy's functions do not accept."""

    __slots__ = ("a",)
    __array_ufunc__ = None  # ndarray (op) WArray defers to WArray; np.ufunc(WArray) raises
    __hash__ = None

    def __init__(self, array: np.ndarray):
        self.a = array

    def __array_function__(self, func, types, args, kwargs):
        raise LeakError(f"np.{func.__name__} called on a wrapped array (bypassed the backend)")

    def __array__(self, *args, **kwargs):
        raise LeakError("a wrapped array was converted with np.asarray (bypassed the backend)")

    def __getattr__(self, name):
        if name.startswith("__"):  # no __array_interface__ / __array_struct__ back door
            raise AttributeError(name)
        value = getattr(self.a, name)
        return _lifted(value, type(self)) if callable(value) else wrap(value, type(self))

    @property
    def T(self):  # noqa: N802 (NumPy's name)
        return type(self)(self.a.T)

    def __getitem__(self, key):
        return wrap(self.a[unwrap(key)], type(self))

    def __setitem__(self, key, value):
        self.a[unwrap(key)] = unwrap(value)

    def __len__(self):
        return len(self.a)

    def __iter__(self):
        return (wrap(v, type(self)) for v in self.a)

    def __bool__(self):
        return bool(self.a)

    def __float__(self):
        return float(self.a)

    def __int__(self):
        return int(self.a)

    def __index__(self):
        return operator.index(self.a)

    def __repr__(self):
        return f"{type(self).__name__}({self.a!r})"


def _binary(fn, reflected=False):
    if reflected:
        return lambda self, other: wrap(fn(unwrap(other), self.a), type(self))
    return lambda self, other: wrap(fn(self.a, unwrap(other)), type(self))


def _inplace(fn):
    """`a op= b` writes into the wrapped array, as CuPy's in-place operators do (without this
    Python falls back to `a = a op b`, a new array, and a write into a buffer is lost)."""
    def method(self, other):
        result = fn(self.a, unwrap(other))
        if result is not self.a:
            raise TypeError(f"{fn.__name__}: the result does not fit the array in place")
        return self
    return method


for _name, _fn in [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                   ("mod", operator.mod), ("pow", operator.pow), ("matmul", operator.matmul),
                   ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor),
                   ("lshift", operator.lshift), ("rshift", operator.rshift)]:
    setattr(WArray, f"__{_name}__", _binary(_fn))
    setattr(WArray, f"__r{_name}__", _binary(_fn, reflected=True))
    setattr(WArray, f"__i{_name}__", _inplace(getattr(operator, f"i{_name}")))
for _name, _fn in [("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
                   ("ge", operator.ge), ("eq", operator.eq), ("ne", operator.ne)]:
    setattr(WArray, f"__{_name}__", _binary(_fn))
for _name, _fn in [("neg", operator.neg), ("pos", operator.pos), ("abs", operator.abs),
                   ("invert", operator.invert)]:
    setattr(WArray, f"__{_name}__", (lambda f: lambda self: wrap(f(self.a), type(self)))(_fn))


class _Ufunc:
    """A NumPy ufunc lifted to wrapped arrays (call, `.at`, `.reduce`, `.outer`, ...)."""

    def __init__(self, ufunc: np.ufunc, cls=None):
        self._u = ufunc
        self._cls = cls
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        _check_host(self._cls, args, kwargs, self.__name__)
        return wrap(self._u(*unwrap(args), **unwrap(kwargs)), self._cls)

    def __getattr__(self, name):
        value = getattr(self._u, name)
        return _lifted(value, self._cls) if callable(value) else value


class _Namespace(types.SimpleNamespace):
    """Mirrors a NumPy module (or a Generator): functions and ufuncs lifted, dtypes and
    constants as they are."""

    def __init__(self, module, cls=None):
        super().__init__()
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_cls", cls or WArray)

    def __getattr__(self, name):
        if name == "ndarray":
            return self._cls
        value = getattr(self._module, name)
        if isinstance(value, np.ufunc):
            lifted = _Ufunc(value, self._cls)
        elif isinstance(value, types.ModuleType):
            lifted = _Namespace(value, self._cls)
        elif isinstance(value, type) or not callable(value):
            lifted = value  # dtypes (np.float32), classes, constants (np.pi, np.newaxis)
        else:
            lifted = _lifted(value, self._cls)
        object.__setattr__(self, name, lifted)
        return lifted


wrapped_xp = _Namespace(np)


def _to_numpy(array):
    return array.a


wrapped_backend = register(Backend(
    name="wrapped-numpy",
    xp=wrapped_xp,
    array_types=(WArray,),
    rng_factory=lambda seed: _Namespace(np.random.default_rng(seed)),
    to_numpy_fn=_to_numpy,
))
