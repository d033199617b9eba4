"""Graphviz DOT text of a tape (from an eager tensor) or of a static graph."""

from __future__ import annotations

from ..autograd.function import AccumulateGrad
from ..graph.graph import Graph
from ..tensor import Tensor

_STYLE = {
    "placeholder": 'shape=box, style=filled, fillcolor="#dbe9f6"',
    "variable": 'shape=box, style=filled, fillcolor="#fbe5c8"',
    "constant": 'shape=box, style=filled, fillcolor="#eeeeee"',
    "assign": 'shape=octagon, style=filled, fillcolor="#f6d5d5"',
}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def tape_to_dot(tensor: Tensor) -> str:
    """The backward graph that `tensor.backward()` would walk, from its grad_fn to the leaves."""
    if tensor.grad_fn is None:
        label = f"leaf {tuple(tensor.shape)}"
        return f"digraph tape {{\n  n0 [label={_quote(label)}, shape=box];\n}}\n"
    lines = ["digraph tape {", "  rankdir=BT;", '  node [fontname="Helvetica"];']
    ids: dict = {}
    stack = [tensor.grad_fn]
    while stack:
        fn = stack.pop()
        if id(fn) in ids:
            continue
        ids[id(fn)] = f"n{len(ids)}"
        if type(fn) is AccumulateGrad:
            var = fn.variable
            shape = tuple(var.shape) if var is not None else "?"
            lines.append(f"  {ids[id(fn)]} [label={_quote(f'AccumulateGrad {shape}')}, "
                         'shape=box, style=filled, fillcolor="#fbe5c8"];')
        else:
            lines.append(f"  {ids[id(fn)]} [label={_quote(fn.name())}];")
        stack.extend(f for f, _ in fn.next_functions if f is not None)
    seen = set()
    stack = [tensor.grad_fn]
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                lines.append(f"  {ids[id(fn)]} -> {ids[id(nxt)]};")
                stack.append(nxt)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _graph_body(graph: Graph, lines: list, prefix: str, indent: str) -> None:
    for node in graph.nodes:
        label = f"{node.name}\\n{node.op.name} : {node.type_str}"
        style = _STYLE.get(node.op.name, "shape=ellipse")
        lines.append(f'{indent}"{prefix}{node.name}" [label="{label}", {style}];')
        for value in node.attrs.values():
            if isinstance(value, Graph):
                sub = f"{prefix}{node.name}/{value.name}/"
                lines.append(f'{indent}subgraph "cluster_{sub}" {{')
                lines.append(f'{indent}  label={_quote(f"{node.name}: {value.name}")};')
                _graph_body(value, lines, sub, indent + "  ")
                lines.append(f"{indent}}}")
    for node in graph.nodes:
        for inp in node.inputs:
            src = prefix if inp.graph is graph else ""
            lines.append(f'{indent}"{src}{inp.name}" -> "{prefix}{node.name}";')


def graph_to_dot(graph: Graph) -> str:
    """Every node of `graph` (inputs boxed, Variables shaded, sub-graphs as clusters)."""
    lines = [f"digraph {_quote(graph.name)} {{", '  node [fontname="Helvetica"];']
    _graph_body(graph, lines, "", "  ")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_dot(obj) -> str:
    """DOT text for an eager tensor's tape, a symbolic tensor's graph, a Graph, or an object
    that draws itself (a `to_dot()` method: a distribution plan)."""
    if isinstance(obj, Graph):
        return graph_to_dot(obj)
    if isinstance(obj, Tensor):
        if obj._node is not None:
            return graph_to_dot(obj._node.graph)
        return tape_to_dot(obj)
    if callable(getattr(obj, "to_dot", None)):
        return obj.to_dot()
    raise TypeError(f"to_dot: expected a Tensor or a dj.Graph, got {type(obj).__name__}")
