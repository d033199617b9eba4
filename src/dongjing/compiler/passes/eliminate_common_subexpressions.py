"""Common-subexpression elimination: one node for each (op, inputs, attributes) computed twice."""

from __future__ import annotations

from ... import dtypes
from ...backends import backend_of, default_backend, is_array
from ..ir import PassResult, Rebuilder, is_pure

_SMALL = 4096  # constants up to this many elements are compared by value


def _freeze(value):
    """A hashable stand-in for an attribute value."""
    kind = type(value)
    if kind is int or kind is str or kind is bool or value is None:  # the common attributes
        return (kind.__name__, value)
    if kind is tuple or kind is list:  # exact types: neither an array nor a scalar
        return (kind.__name__,) + tuple([_freeze(v) for v in value])
    if kind is dict:
        if not value:
            return ("dict",)
        return ("dict",) + tuple([(k, _freeze(v)) for k, v in sorted(value.items(), key=_first)])
    if is_array(value):
        if value.size <= _SMALL:
            data = backend_of(value).to_numpy(value).tobytes()
            return ("array", value.dtype.str, value.shape, data)
        return ("object", id(value))
    if isinstance(value, dtypes.FLOAT_SCALARS):
        return ("float", float(value).hex())  # 0.0 and -0.0 are equal but not the same attr
    if isinstance(value, dtypes.ARRAY_SCALARS):
        return _freeze(default_backend().asarray(value))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return ("dict",) + tuple((k, _freeze(v)) for k, v in sorted(value.items(), key=_first))
    try:
        hash(value)
    except TypeError:
        return ("object", id(value))
    return (type(value).__name__, value)


def _key(node, inputs):
    op = node.op.name
    if op == "variable":
        return ("variable", id(node.attrs["ref"]))  # two reads of one Variable see one value
    if op == "constant":
        return ("constant", _freeze(node.attrs["value"]))
    if not is_pure(node):
        return None  # placeholders, random ops, effects and control flow are never merged
    return (op, tuple(map(id, inputs)), _freeze(node.attrs), node.dtype)


def eliminate_common_subexpressions(graph, fetches: list) -> PassResult:
    """Merge nodes that compute the same op on the same inputs with the same attributes."""
    rb = Rebuilder(graph, lazy=True)
    seen: dict = {}
    changes = []
    for node in graph.nodes:
        inputs = rb.inputs(node)
        key = _key(node, inputs)
        twin = seen.get(key) if key is not None else None
        if twin is not None and twin.shape == node.shape:
            rb.map[node] = twin  # same op, same inputs, same attrs -> same value
            changes.append(f"merged %{node.name} into %{twin.name}")
            continue
        new = rb.copy(node, inputs)
        rb.map[node] = new
        if key is not None:
            seen[key] = new
    return PassResult(*rb.finish(fetches), changes)


def _first(item):
    return item[0]
