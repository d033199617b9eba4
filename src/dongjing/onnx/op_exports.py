"""How an op exports to ONNX, read from its op record: the record's ``onnx`` fact is the only
place it is stated (``define(..., onnx=...)`` in `dongjing.ops`).

``onnx`` is an ONNX op type (one node, no attributes, no casts), an `Onnx` record (the op is one
ONNX node: its type, which dongjing attributes become which ONNX attributes, and whether inputs
are cast to one dtype first), or a function ``rule(e, node, ins) -> name | [names]`` emitting a
decomposition through the `Emitter` `e` (the rules are in `dongjing.ops.onnx_rules` and
`dongjing.ops.onnx_graph_rules`, the source ops' in `dongjing.graph.onnx_rules`). An op that
cannot export has ``onnx=None`` and says why in ``onnx_reason``. A test checks that every op of
the table has one or the other.
"""

from __future__ import annotations

from ..core.registry import Onnx
from ..graph.onnx_rules import NOT_TRAINABLE

__all__ = ["NOT_TRAINABLE", "Onnx", "rule_for"]


def rule_for(op) -> tuple:
    """(rule, None) for an exportable op, (None, reason) otherwise, from the op record's `onnx`
    (an ONNX op type, an `Onnx` record or a rule function) and `onnx_reason`."""
    declared = getattr(op, "onnx", None)
    if isinstance(declared, str):
        return Onnx(declared), None
    if declared is not None:
        return declared, None
    return None, getattr(op, "onnx_reason", None) or "no ONNX export is declared for it"
