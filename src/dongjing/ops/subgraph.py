"""Sub-graphs of control-flow ops: arguments, captured outer values, outputs, and inlining."""

from __future__ import annotations

import copy

from ..core.registry import register
from ..errors import GraphError
from ..graph import builder, onnx_rules
from ..graph.graph import Graph, Node
from ..tensor import Tensor
from .convert import as_tensor


def _arg_forward(*args, **attrs):
    raise GraphError("internal: a sub-graph argument gets its value from the control-flow op")


arg_op = register("arg", forward=_arg_forward, infer=lambda **attrs: ((), None), kind="source",
                  onnx=onnx_rules.bound)


class SubGraph(Graph):
    """The body of a control-flow op: explicit `args` first, then one arg per captured outer
    value (`captures[i]`, a node of `parent`, feeds `args[n_explicit + i]`), and `outputs`."""

    def __init__(self, name: str, parent: Graph):
        super().__init__(name, parent)
        self.args: list[Node] = []
        self.captures: list[Node] = []
        self.outputs: list[Node] = []
        self.n_explicit = 0
        self._outer: dict[Node, Node] = {}

    def add_arg(self, shape, dtype, name: str) -> Node:
        """A new argument node of this sub-graph."""
        node = self.add_node(arg_op, (), {"index": len(self.args)}, shape, dtype, name)
        self.args.append(node)
        return node

    def resolve_outer(self, node: Node) -> Node:
        """The local node standing for `node` of an enclosing graph (captured on first use)."""
        if node.graph is self:
            return node
        local = self._outer.get(node)
        if local is not None:
            return local
        parent = self.parent
        if node.graph is parent:
            outer = node
        elif isinstance(parent, SubGraph):
            outer = parent.resolve_outer(node)
        else:
            raise GraphError(
                f"tensor {node.name!r} belongs to graph {node.graph.name!r}, which does not "
                f"enclose the sub-graph {self.name!r} being built"
            )
        local = self.add_arg(node.shape, node.dtype, node.name)
        self.captures.append(outer)
        self._outer[node] = local
        return local

    def root(self) -> Graph:
        graph = self.parent
        while isinstance(graph, SubGraph):
            graph = graph.parent
        return graph


def compile_subgraphs(graph: Graph, level: int) -> None:
    """Make the control-flow nodes of `graph` (a compiled copy) run their sub-graphs compiled at
    `level` (optimized and code-generated, see runtime/interpreter.py's subgraph_program)."""
    merge_recorded_loops(graph)  # a loop and its gradient's recording: one run
    for node in graph.nodes:
        if any(isinstance(v, SubGraph) for v in node.attrs.values()):
            node.attrs = {k: _compiled_view(v, level) if isinstance(v, SubGraph) else v
                          for k, v in node.attrs.items()}


def _compiled_view(sub: SubGraph, level: int) -> SubGraph:
    view = copy.copy(sub)  # same nodes; its own program cache and compile level
    view.__dict__.pop("_program", None)
    view.compile_level = level
    return view


def trace(fn, args: list, parent: Graph, name: str) -> tuple[SubGraph, object]:
    """Build `fn(*args)` into a new SubGraph of `parent`; `args` are (shape, dtype, name).

    Returns the sub-graph (with `outputs` set) and the structure `fn` returned.
    """
    sub = SubGraph(parent.unique_name(name), parent)
    params = [Tensor._symbolic(sub.add_arg(s, d, n)) for s, d, n in args]
    sub.n_explicit = len(params)
    with sub.as_default():
        result = fn(*params)
        flat = list(result) if isinstance(result, (list, tuple)) else [result]
        if not flat:
            raise GraphError(f"{name}: the function must return at least one tensor")
        sub.outputs = [builder.to_node(sub, as_tensor(t)) for t in flat]
    for node in sub.nodes:
        if node.op.name == "placeholder":
            raise GraphError(f"{name}: dj.placeholder {node.name!r} inside a control-flow "
                             "function; create placeholders in the outer graph")
    return sub, result


def inline(sub: SubGraph, args: list) -> list:
    """Copy `sub`'s nodes into the current default graph, its args bound to Tensors `args`."""
    mapping: dict[Node, object] = dict(zip(sub.args, args))
    for node in sub.nodes:
        if node in mapping:
            continue
        if node.op.kind == "source":
            if node.op.name != "constant":
                raise GraphError(f"internal: cannot inline source node {node.name!r}")
            mapping[node] = Tensor._make(node.attrs["value"])
        else:
            inputs = [mapping[i] for i in node.inputs]
            mapping[node] = builder.add(node.op, inputs, node.attrs)
    return [mapping[o] for o in sub.outputs]


def merge_recorded_loops(graph) -> None:
    """In a compiled copy of a graph: a while_loop whose gradient recorded it (a while_record
    on the same inputs) runs once — the record also gives the final values."""
    records = {}
    for node in graph.nodes:
        if node.op.name == "while_record":  # ops.while_grad's record of a loop
            records.setdefault((node.inputs, id(node.attrs["body_graph"])), node)
    if not records:
        return
    moved = {}
    for node in graph.nodes:
        if node.op.name != "while_loop":
            continue
        rec = records.get((node.inputs, id(node.attrs["body_graph"])))
        if rec is None or rec in moved.values() or rec.attrs["cond_graph"] is not \
                node.attrs["cond_graph"] or rec.attrs["maximum_iterations"] != \
                node.attrs["maximum_iterations"]:
            continue
        rec.attrs = {**rec.attrs, "with_finals": True,
                     "out_specs": list(rec.attrs["out_specs"]) + list(node.attrs["out_specs"])}
        moved[node] = rec
    if not moved:
        return
    nodes = []
    for node in graph.nodes:
        if node in moved:
            nodes.append(moved[node])  # the record runs where the loop ran
            continue
        if node in moved.values():
            continue
        if any(i in moved for i in node.inputs):
            if node.op.name == "tuple_get":
                n_vars = moved[node.inputs[0]].attrs["n_vars"]
                node.attrs = {**node.attrs, "index": node.attrs["index"] + n_vars}
            node.inputs = tuple(moved.get(i, i) for i in node.inputs)
        nodes.append(node)
    graph.nodes[:] = nodes
    graph.version += 1
