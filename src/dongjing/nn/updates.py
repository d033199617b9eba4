"""Updates of module state (batch-norm running statistics): in place eagerly; in a graph, an
assignment collected per graph, which `optimizer.minimize` runs with its train op."""

from __future__ import annotations

import weakref

import dongjing

from ..backends import write_into
from ..errors import GraphError
from ..graph.builder import get_default_graph
from ..graph.variable import Variable
from ..tensor import Tensor

_PENDING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def update_buffer(buffer: Variable, value: Tensor) -> None:
    """Set `buffer` to `value`: in place now (eager), or as a `dj.assign` node of the graph."""
    if value._node is None:
        write_into(buffer._data, value._data)
        buffer._version[0] += 1
        return

    assign = getattr(dongjing, "assign", None)
    if assign is None:
        raise GraphError("updating a buffer inside a graph needs dj.assign")
    graph = value._node.graph
    _PENDING.setdefault(graph, []).append(assign(buffer, value))


def update_ops(graph=None) -> list:
    """The buffer assignments built in `graph` (default: the current graph) and not yet taken.

    `optimizer.minimize` takes them into its train op; run them yourself otherwise
    (`sess.run(dj.nn.update_ops(g))`), as TensorFlow's UPDATE_OPS.
    """
    if graph is None:
        graph = get_default_graph()
    return list(_PENDING.get(graph, [])) if graph is not None else []


def take_update_ops(graph) -> list:
    """The pending assignments of `graph`, removed from the pending list."""
    return _PENDING.pop(graph, []) if graph is not None else []
