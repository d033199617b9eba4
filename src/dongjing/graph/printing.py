"""Readable text of a graph: one node a line (`%name = op(%inputs, attrs) : type`), the
sub-graphs of control-flow ops indented under them, each ending in `return`."""

from __future__ import annotations

from .. import dtypes

_HIDDEN = {  # attrs shown elsewhere on the line (or as the sub-graphs below it)
    "constant": {"value"}, "variable": {"ref"}, "assign": {"ref"},
    "tuple_get": {"shape", "dtype"}, "placeholder": {"shape", "dtype"},
}


def _spec_str(shape, dtype) -> str:
    dims = ",".join("?" if d is None else str(d) for d in shape)
    return f"{dtypes.short_name(dtype)}[{dims}]"


def type_text(node) -> str:
    """`f32[?,256]`; a control-flow node's tuple of outputs as `(f32[], i64[])`."""
    specs = node.attrs.get("out_specs") if node.dtype is None else None
    if specs is not None:
        return "(" + ", ".join(_spec_str(s.shape, s.dtype) for s in specs) + ")"
    return node.type_str


def _value_text(value) -> str:
    if dtypes.is_dtype(value) or dtypes.is_scalar_type(value):
        return dtypes.short_name(value)
    return repr(value)


def _args(node) -> str:
    parts = [f"%{i.name}" for i in node.inputs]
    op = node.op.name
    if op == "constant":
        value = node.attrs["value"]
        if value.size <= 4:
            parts.append(repr(value.tolist()))
    hidden = _HIDDEN.get(op, ())
    for key, value in node.attrs.items():
        if key in hidden or key == "out_specs" or _is_graph(value):
            continue
        parts.append(f"{key}={_value_text(value)}")
    return ", ".join(parts)


def _is_graph(value) -> bool:
    return hasattr(value, "nodes") and hasattr(value, "parent")


def _header(graph, indent: str) -> str:
    args = getattr(graph, "args", None)
    if args is None:
        args = [n for n in graph.nodes if n.op.name == "placeholder"]
    head = ", ".join(f"%{n.name}: {n.type_str}" for n in args)
    return f"{indent}{graph.name}({head}):"


def format_graph(graph, indent: str = "") -> str:
    """The text of `graph` (what `print(g)` shows)."""
    lines = [_header(graph, indent)]
    inner = indent + "  "
    for node in graph.nodes:
        if node.op.name in ("placeholder", "arg"):
            continue
        lines.append(f"{inner}%{node.name} = {node.op.name}({_args(node)}) : {type_text(node)}")
        for value in node.attrs.values():
            if _is_graph(value):
                lines.append(format_graph(value, inner + "  "))
    outputs = getattr(graph, "outputs", None)
    if outputs:
        lines.append(f"{inner}return " + ", ".join(f"%{n.name}" for n in outputs))
    return "\n".join(lines)
