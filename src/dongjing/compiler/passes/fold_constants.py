"""Constant folding: pure ops on constants, and ops whose value follows from shapes alone."""

from __future__ import annotations

from ...backends import default_backend
from ...core.low_precision import needs_widening, widened
from ..ir import PassResult, Rebuilder, is_constant, is_pure, numel

MAX_FOLD_ELEMENTS = 1 << 20  # a folded result bigger than this stays a computation


def _shape_only_arrays(inputs):
    """Zero-stride stand-ins for the inputs of a shape-only op, or None if a dim is unknown."""
    arrays = []
    for node in inputs:
        if node.dtype is None or any(d is None for d in node.shape):
            return None
        arrays.append(default_backend().broadcast_scalar(0, node.dtype, node.shape))
    return arrays


def fold_constants(graph, fetches: list) -> PassResult:
    """Replace each foldable node by a constant holding its value.

    Foldable: a pure op (no Variable, placeholder, random op, effect or control flow) whose
    inputs are all constants, or a "shape" op (like `count`) whose input shapes are all known.
    """
    rb = Rebuilder(graph, lazy=True)
    changes = []
    for node in graph.nodes:
        inputs = rb.inputs(node)
        value = None
        if node.op.kind == "shape":
            arrays = _shape_only_arrays(inputs)
            if arrays is not None:
                value = node.op.forward(*arrays, **node.attrs)  # count(x) -> its number
        elif inputs and is_pure(node) and all(is_constant(i) for i in inputs):
            size = numel(node.shape) or 1
            if size <= MAX_FOLD_ELEMENTS:
                arrays = [i.attrs["value"] for i in inputs]
                forward = node.op.forward
                if needs_widening(node.op, [a.dtype for a in arrays]):  # 16-bit floats
                    forward = widened(forward, node.dtype)
                value = forward(*arrays, **node.attrs)  # f(constants) -> constant
        if value is None:
            rb.map[node] = rb.copy(node, inputs)
            continue
        value = default_backend().array(value)  # own storage, never a view of another constant
        rb.map[node] = rb.constant(value, node)
        changes.append(f"folded %{node.name} = {node.op.name}(...) to a constant "
                       f"{value.dtype}{list(value.shape)}")
    return PassResult(*rb.finish(fetches), changes)
