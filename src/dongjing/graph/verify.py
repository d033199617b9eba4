"""`Graph.verify()`: the IR's invariants (SSA order, one graph, unique names, types that
inference agrees with), so a pass that breaks a graph is caught where it happens."""

from __future__ import annotations

from ..core.registry import Spec
from ..errors import DongjingError, GraphError


def verify(graph) -> None:
    """Raise GraphError naming the first node that breaks an invariant; sub-graphs too."""
    defined: set = set()
    names: set = set()
    for node in graph.nodes:
        where = f"graph {graph.name!r}, node %{node.name}"
        if node.graph is not graph:
            raise GraphError(f"{where}: belongs to graph {node.graph.name!r}")
        if node.name in names:
            raise GraphError(f"{where}: the name is used twice")
        names.add(node.name)
        for i in node.inputs:
            if i not in defined:
                raise GraphError(f"{where}: input %{i.name} is not defined before it in this graph")
        if node.op.kind != "source":
            _check_type(node, where)
        for value in node.attrs.values():
            if hasattr(value, "nodes") and hasattr(value, "outputs"):
                verify(value)
        defined.add(node)
    for out in getattr(graph, "outputs", ()):
        if out not in defined:
            raise GraphError(f"graph {graph.name!r}: output %{out.name} is not one of its nodes")


def _check_type(node, where: str) -> None:
    specs = [Spec(i.shape, i.dtype) for i in node.inputs]
    try:
        shape, dtype = node.op.infer(*specs, **node.attrs)
    except DongjingError as exc:
        raise GraphError(f"{where}: its op rejects its inputs: {exc}") from None
    if tuple(shape) != node.shape or (dtype is not None and dtype != node.dtype):
        raise GraphError(f"{where}: typed {node.type_str}, but {node.op.name} infers shape "
                         f"{tuple(shape)} and dtype {dtype}")
