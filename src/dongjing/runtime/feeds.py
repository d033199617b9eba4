"""Feed validation: every feed_dict key and value is checked (and converted like TF1) before a
run starts, and every problem is a FeedError naming the placeholder."""

from __future__ import annotations

from ..backends import default_backend, is_array
from ..core.infer import fmt
from ..core.validation import fits_integer
from ..errors import FeedError
from ..graph.graph import Node
from ..tensor import Tensor
from . import placement

# which kinds of given values a placeholder of each kind accepts (bool < int < float)
_ACCEPTS = {"f": "fiu", "i": "iu", "u": "iu", "b": "b"}


def resolve_key(graph, key):
    """The node a feed_dict key names: a symbolic tensor of `graph`, or a node name."""
    if isinstance(key, str):
        name = key[:-2] if key.endswith(":0") else key
        if name in graph._by_name:
            return graph._by_name[name]
        raise FeedError(f"feed_dict key {key!r}: the graph has no node of that name")
    if isinstance(key, Tensor) and key._node is not None:
        if key._node.graph is not graph:
            raise FeedError(f"feed_dict key {key._node.name!r} belongs to another graph "
                            f"({key._node.graph.name!r})")
        return key._node

    if isinstance(key, Node) and key.graph is graph:
        return key
    raise FeedError(f"feed_dict key {key!r} is not a placeholder of this graph (use the "
                    "tensor dj.placeholder returned, or its name)")


def _describe(node) -> str:
    what = "placeholder" if node.op.name == "placeholder" else "fed node"
    return f"{what} {node.name!r}"


def convert(node, value, where: placement.Placement = placement.CPU):
    """`value` as an array of `node`'s dtype on the device `where` the program runs on (host
    data is copied there), or a FeedError saying what does not fit. A device array for a
    program placed elsewhere raises `placement.DeviceFeedError`."""
    if not is_array(value):
        value = _plain_value(node, value)
    on = placement.of_array(value)
    if on is not None and on != where:
        raise placement.DeviceFeedError(
            f"feed for {_describe(node)} lives on {on}, but this program runs on {where} "
            "(where the Variables it reads live); move the feed or the Variables", on)
    want = node.dtype
    try:
        given = value if on is not None else default_backend().asarray(value)
    except (ValueError, TypeError) as exc:
        raise FeedError(f"feed for {_describe(node)}: expected {_expected(node)}, got a value "
                        f"that cannot be turned into an array ({exc})") from None
    if given.dtype.kind not in _ACCEPTS.get(want.kind, want.kind):
        raise FeedError(f"feed for {_describe(node)}: expected {_expected(node)}, got shape "
                        f"{fmt(given.shape)} {_kind_name(given)}")
    shape = node.shape
    if given.ndim != len(shape) or any(
        d is not None and d != g for d, g in zip(shape, given.shape)
    ):
        raise FeedError(f"feed for {_describe(node)}: expected {_expected(node)}, got shape "
                        f"{fmt(given.shape)} {given.dtype}")
    if given.dtype != want:
        if want.kind in "iu" and not fits_integer(given, want):
            raise FeedError(f"feed for {_describe(node)}: values from {given.min()} to "
                            f"{given.max()} do not fit {want}")
        given = given.astype(want)
    if where.backend is not None and on is None:
        given = where.backend.move(given, where.index)
    return given


def _plain_value(node, value):
    """The data of an eager Tensor feed (a symbolic one is a FeedError); other values as given."""
    if isinstance(value, Tensor):
        if value._node is not None:
            raise FeedError(f"feed for {_describe(node)}: got the symbolic tensor "
                            f"{value._node.name!r}; feed a value (NumPy array, list, number)")
        return value._data
    return value


def _expected(node) -> str:
    return f"shape {fmt(node.shape)} {node.dtype}"


def _kind_name(array) -> str:
    kind = array.dtype.kind
    if kind in "US":
        return f"{array.dtype} (strings)"
    if kind == "O":
        return "object (Python objects)"
    return str(array.dtype)


def missing_message(nodes) -> str:
    listed = ", ".join(f"{n.name!r} (shape {fmt(n.shape)} {n.dtype})" for n in nodes)
    return (f"the fetches need placeholder{'s' if len(nodes) > 1 else ''} {listed}, not given "
            "in feed_dict")
