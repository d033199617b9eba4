"""The TF1 default graph (implicit, module level, persisting across calls), per-graph TF state
(variables created in it, specializations of unknown-rank placeholders) and `tf_function`, the
decorator that builds every tf.* call inside a graph."""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from ...errors import GraphError
from ...graph import Graph, builder
from ...tensor import Tensor
from .deferred import Deferred, has_deferred, record


class _Default:
    graph: Graph | None = None


_default = _Default()


def get_default_graph() -> Graph:
    """The graph tf ops are added to: the innermost `with g.as_default():` graph, else the
    module-level default graph (created on first use, kept until `reset_default_graph()`)."""
    graph = builder.get_default_graph()
    if graph is not None:
        return graph
    if _default.graph is None:
        _default.graph = Graph("default")
    return _default.graph


def reset_default_graph() -> None:
    """Start a new module-level default graph (the old one's tensors cannot mix with new ones)."""
    if builder.state.stack:
        raise GraphError("tf.reset_default_graph() called inside a `with graph.as_default():` "
                         "block (or a Session's `with`): leave it first, as TensorFlow requires")
    _default.graph = Graph("default")


def _symbolic_graph(values):
    """The graph of the first symbolic tensor in a (nested) argument list, or None."""
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, Tensor) and not isinstance(value, Deferred):
            node = value._node
            if node is not None:
                return node.graph
    return None


@contextmanager
def building(args=()):
    """Run the body with a graph as dj's default: the current one if any, else the graph of a
    symbolic argument, else the TF default graph (so even `tf.add(1, 2)` is a graph op)."""
    if builder.state.graph is not None:
        yield builder.state.graph
        return
    graph = _symbolic_graph(args) or get_default_graph()
    with graph.as_default():
        yield graph


_P = ParamSpec("_P")
_R = TypeVar("_R")


def tf_function(fn: Callable[_P, _R]) -> Callable[_P, _R | Deferred]:
    """Decorate a tf.* function: a call on an unknown-rank value is recorded for replay at run
    time; any other call runs now, inside a graph."""

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R | Deferred:
        if has_deferred(args) or has_deferred(kwargs.values()):
            return record(wrapper, args, kwargs, fn.__name__)
        with building((args, tuple(kwargs.values()))):
            return fn(*args, **kwargs)

    return wrapper
