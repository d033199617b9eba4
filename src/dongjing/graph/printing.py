"""Readable text of a graph: one node a line."""

from __future__ import annotations


def _ref(node) -> str:
    return f"%{node.name}"


def _attr_text(node) -> str:
    parts = []
    for key, value in node.attrs.items():
        if key in ("ref", "value"):
            continue
        parts.append(f"{key}={value!r}")
    return ", ".join(parts)


def format_graph(graph, indent: str = "") -> str:
    inputs = [n for n in graph.nodes if n.op.name == "placeholder"]
    head = ", ".join(f"{n.name}: {n.type_str}" for n in inputs)
    lines = [f"{indent}{graph.name}({head}):"]
    for node in graph.nodes:
        if node.op.name == "placeholder":
            continue
        args = [_ref(i) for i in node.inputs]
        attrs = _attr_text(node)
        if attrs:
            args.append(attrs)
        lines.append(f"{indent}  %{node.name} = {node.op.name}({', '.join(args)}) : "
                     f"{node.type_str}")
        for sub in getattr(node, "subgraphs", lambda: [])() if callable(
                getattr(node, "subgraphs", None)) else []:
            lines.append(format_graph(sub, indent + "    "))
    return "\n".join(lines)
