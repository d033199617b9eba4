"""ONNX export rules of the graph's source ops (placeholder, sub-graph arg, constant, variable),
declared on their records (``register(..., onnx=rule)``); the rule contract is in
`dongjing.ops.onnx_rules`. A leaf: the graph layer is imported before `dongjing.ops`.
"""

from __future__ import annotations

NOT_TRAINABLE = "dongjing: not trainable"  # the doc_string of a buffer's initializer


def bound(e, node, ins):
    """Placeholders and sub-graph arguments: bound to graph inputs before the walk."""
    raise e.error(f"internal: {node.op.name} {node.name!r} was not bound to an input")


def constant(e, node, ins):
    """A Constant node of the value."""
    return e.const(node.attrs["value"], name=node.name)


def variable(e, node, ins):
    """An initializer named after the node (a buffer's marked not trainable)."""
    ref = node.attrs["ref"]
    trainable = getattr(ref, "trainable", ref.requires_grad)
    return e.const(ref._data, name=node.name, initializer=True,
                   doc="" if trainable else NOT_TRAINABLE)
