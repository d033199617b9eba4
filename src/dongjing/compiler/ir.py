"""What every pass shares: rebuilding a graph node by node, purity tests, and a pass's result."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..backends import default_backend
from ..graph.graph import Graph, Node


@dataclass
class PassResult:
    """A pass's output: the new graph, the fetches moved onto it, and one line per change."""

    graph: Graph
    fetches: list
    changes: list = field(default_factory=list)


def is_pure(node: Node) -> bool:
    """True for a node whose value depends only on its inputs (foldable, mergeable)."""
    op = node.op
    return op.kind not in ("source", "effect", "control") and not op.random


def is_constant(node: Node) -> bool:
    return node.op.name == "constant"


class Rebuilder:
    """Copies nodes of `old` into a fresh graph, keeping names and source lines.

    `map[old_node]` is the node that stands for it in the new graph (a copy, or a replacement).
    Copy on write: when every node was copied unchanged, `finish` hands back `old` itself, so a
    pass that changes nothing costs no new graph (`copy_on_write=False` always copies).
    """

    def __init__(self, old: Graph, copy_on_write: bool = True):
        self.old = old
        self.graph = Graph(old.name)
        self.map: dict[Node, Node] = {}
        self.unchanged = copy_on_write  # so far, only plain copies were made

    def inputs(self, node: Node) -> tuple:
        return tuple(self.map[i] for i in node.inputs)

    def copy(self, node: Node, inputs=None, **changes) -> Node:
        """A copy of `node` on `inputs` (default: the mapped inputs), with fields replaced."""
        fields = {
            "op": node.op, "attrs": node.attrs, "shape": node.shape, "dtype": node.dtype,
            "name": node.name, "source": node.source,
        }
        if inputs is None:
            inputs = self.inputs(node)
        elif self.unchanged:
            inputs = tuple(inputs)
            mapped = tuple(self.map.get(i) for i in node.inputs)
            if len(inputs) != len(mapped) or any(a is not b for a, b in zip(inputs, mapped)):
                self.unchanged = False
        if changes:
            self.unchanged = False
        fields.update(changes)
        unchanged = self.unchanged
        new = self.emit(inputs, **fields)
        self.unchanged = unchanged and new.name == node.name
        return new

    def emit(self, inputs, *, op, attrs, shape, dtype, name, source=None) -> Node:
        """Append a new node (its name made unique against the old and the new graph)."""
        self.unchanged = False  # a node made here, not a copy (copy() restores the flag)
        graph = self.graph
        if name in graph._by_name:
            name = self.fresh_name(name)
        new = Node(op, inputs, attrs, shape, dtype, name, graph, source)
        graph.nodes.append(new)
        graph._by_name[name] = new
        graph.version += 1
        return new

    def fresh_name(self, base: str) -> str:
        base = base.rsplit("_", 1)[0] if base.rsplit("_", 1)[-1].isdigit() else base
        i = 0
        while True:
            name = f"{base}_c{i}"
            if name not in self.graph._by_name and name not in self.old._by_name:
                return name
            i += 1

    def constant(self, value, like: Node) -> Node:
        """A constant node named after `like` holding `value` (cast to `like`'s dtype).

        Graph constants live on the default backend (the one compiled programs run on)."""
        value = default_backend().asarray(value)
        if like.dtype is not None and value.dtype != like.dtype:
            value = value.astype(like.dtype)
        return self.emit((), op=_constant_op(), attrs={"value": value}, shape=value.shape,
                         dtype=value.dtype, name=like.name, source=like.source)

    def finish(self, fetches) -> tuple[Graph, list]:
        if self.unchanged and self._copied_one_to_one():
            return self.old, list(fetches)
        return self.graph, [self.map[f] for f in fetches]

    def _copied_one_to_one(self) -> bool:
        new = self.graph.nodes
        old = self.old.nodes
        return len(new) == len(old) and all(self.map.get(o) is n for o, n in zip(old, new))


def _constant_op():
    from ..graph.builder import constant_op

    return constant_op


def numel(shape) -> int | None:
    if any(d is None for d in shape):
        return None
    return int(math.prod(shape))
