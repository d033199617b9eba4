"""Expansion of compound elementwise ops (those the op table can `decompose`) into primitives,
so that fusion sees their parts; only where fusion will run (large, known shapes)."""

from __future__ import annotations

from ...graph import builder
from ...tensor import Tensor
from ..ir import PassResult, Rebuilder, numel


def expand_compounds(graph, fetches: list, min_size: int = 1) -> PassResult:
    """Replace each `decompose`-able node of at least `min_size` elements by its composition."""
    if not any(_expandable(node, min_size) for node in graph.nodes):
        return PassResult(graph, list(fetches), [])  # what the rebuild below would hand back
    rb = Rebuilder(graph)
    changes = []
    for node in graph.nodes:
        inputs = rb.inputs(node)
        decompose = node.op.decompose
        if not _expandable(node, min_size):
            rb.map[node] = rb.copy(node, inputs)
            continue
        start = len(rb.graph.nodes)
        builder.push(rb.graph)
        try:
            result = decompose(*[Tensor._symbolic(i) for i in inputs], **node.attrs)
        finally:
            builder.pop(rb.graph)
        made = rb.graph.nodes[start:]
        if result is None or result._node.shape != node.shape or result._node.dtype != node.dtype:
            rb.map[node] = rb.copy(node, inputs)  # unused parts are dead code for DCE
            continue
        for new in made:  # fresh names that collide with no old node; the user's source line
            del rb.graph._by_name[new.name]
            new.name = node.name if new is result._node else rb.fresh_name(new.op.name)
            new.source = node.source
            rb.graph._by_name[new.name] = new
        rb.map[node] = result._node
        changes.append(f"%{node.name}: {node.op.name} -> {len(made)} primitive nodes")
    return PassResult(*rb.finish(fetches), changes)


def _expandable(node, min_size: int) -> bool:
    """The node's op can `decompose` and its output has at least `min_size` (known) elements."""
    if node.op.decompose is None or node.dtype is None:
        return False
    size = numel(node.shape)
    return size is not None and size >= min_size
