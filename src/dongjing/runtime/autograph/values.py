"""Values the converted code passes around: `Undefined` (a variable not bound on some path) and
nested structures of tensors, flattened into leaves and a description to compare and rebuild."""

from __future__ import annotations

from ...backends import backend_of, is_array
from ...errors import GraphError
from ...tensor import Tensor


class ConversionError(GraphError):
    """A limit of dj.jit's source conversion, naming the variable or construct and the line."""

    value_hint = False  # dj.jit adds no "values are unknown while tracing" hint


class Undefined:
    """A variable with no value on this path; any use raises GraphError with `why`."""

    __slots__ = ("name", "why")

    def __init__(self, name: str, why: str):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "why", why)

    def _fail(self, *args, **kwargs):
        raise ConversionError(object.__getattribute__(self, "why"))

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)  # protocol probes (copy, numpy) see a plain object
        self._fail()

    def __repr__(self) -> str:
        return f"<undefined {object.__getattribute__(self, 'name')!r}>"

    __bool__ = __len__ = __iter__ = __call__ = __getitem__ = __setattr__ = _fail
    __array__ = __index__ = __float__ = __int__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _fail
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _fail
    __pow__ = __rpow__ = __matmul__ = __rmatmul__ = __neg__ = __pos__ = __abs__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __and__ = __or__ = __xor__ = __invert__ = _fail


UNDEFINED = Undefined("?", "a variable is used before it is assigned")
UNDEFINED_RETURN = Undefined("return value", "internal: the return value was never set")


def is_undefined(value) -> bool:
    return type(value) is Undefined


def is_number(value) -> bool:
    if isinstance(value, (bool, int, float)):
        return True
    # an array library's scalar (NumPy's float64, bool_ ...): a backend owns it, not an array
    kind = getattr(getattr(value, "dtype", None), "kind", "")
    if not kind or kind not in "biufc" or is_array(value):
        return False
    return backend_of(value, None) is not None


def is_leaf(value) -> bool:
    """A value that can live in a graph: a Tensor, an array or a Python number."""
    return isinstance(value, Tensor) or is_array(value) or is_number(value)


def flatten(value, leaves: list):
    """Append the tensor-like leaves of `value` (nested lists / tuples / dicts) to `leaves`;
    return a hashable-free description of the rest (compared with `same_structure`)."""
    if is_leaf(value):
        leaves.append(value)
        return ("leaf",)
    if type(value) in (list, tuple):
        return (type(value), tuple(flatten(v, leaves) for v in value))
    if type(value) is dict:
        keys = tuple(value)
        return (dict, keys, tuple(flatten(value[k], leaves) for k in keys))
    return ("object", value)


def rebuild(desc, leaves: list, pos: list | None = None):
    """The value described by `desc` with its leaves taken in order from `leaves`."""
    pos = [0] if pos is None else pos
    kind = desc[0]
    if kind == "leaf":
        pos[0] += 1
        return leaves[pos[0] - 1]
    if kind == "object":
        return desc[1]
    if kind is dict:
        return {k: rebuild(d, leaves, pos) for k, d in zip(desc[1], desc[2])}
    return kind(rebuild(d, leaves, pos) for d in desc[1])


def same_structure(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "leaf":
        return True
    if a[0] == "object":
        return a[1] is b[1] or (type(a[1]) is type(b[1]) and _equal(a[1], b[1]))
    if a[0] is dict and a[1] != b[1]:
        return False
    items_a, items_b = a[-1], b[-1]
    return len(items_a) == len(items_b) and all(
        same_structure(x, y) for x, y in zip(items_a, items_b))


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # an object whose == is not a plain truth value: not the same
        return False


def describe(value) -> str:
    """A short description of a value's structure for error messages."""
    if is_undefined(value):
        return "nothing (not assigned)"
    if isinstance(value, Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    if is_number(value):
        return f"the number {value!r}"
    if type(value) in (list, tuple):
        return f"a {type(value).__name__} of {len(value)}"
    if type(value) is dict:
        return f"a dict with keys {list(value)}"
    return f"a {type(value).__name__}"
