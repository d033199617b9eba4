"""What every pass shares: rebuilding a graph node by node, purity tests, and a pass's result."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..backends import default_backend
from ..graph.builder import constant_op
from ..graph.graph import Graph, Node

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ..core.registry import Op
    from ..types import DTypeLike


@dataclass
class PassResult:
    """A pass's output: the new graph, the fetches moved onto it, and one line per change."""

    graph: Graph
    fetches: list[Node]
    changes: list[str] = field(default_factory=list)


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

    `lazy=True` (for passes that touch the new graph only through `copy`, `emit`, `constant`,
    `map`, `inputs` and `finish`) also skips the copies themselves until the first change: up
    to then `copy` hands back the old node, which stands for its own copy; the first change
    (or a read of `graph`) makes the copies made so far, in order. The pass may keep using
    the old nodes it was handed: `emit` and `finish` put their copies in their place. A pass
    that changes nothing thus allocates no node at all.
    """

    def __init__(self, old: Graph, copy_on_write: bool = True, lazy: bool = False):
        self.old = old
        self._graph = Graph(old.name)
        self.map: dict[Node, Node] = {}
        self.unchanged = copy_on_write  # so far, only plain copies were made
        self._lazy = lazy and copy_on_write  # still handing out old nodes as their copies
        self._kept: list = []  # those old nodes, in order (lazy mode)
        self._real: dict = {}  # old node handed out -> its copy, once made

    @property
    def graph(self) -> Graph:
        """The new graph (reading it makes the copies a lazy rebuilder has put off)."""
        if self._lazy:
            self._materialize()
        return self._graph

    def inputs(self, node: Node) -> tuple[Node, ...]:
        return tuple(map(self.map.__getitem__, node.inputs))

    def copy(self, node: Node, inputs: Sequence[Node] | None = None, **changes: Any) -> Node:
        """A copy of `node` on `inputs` (default: the mapped inputs), with fields replaced."""
        if self._lazy:
            if not changes and self._keeps(node, inputs):
                self._kept.append(node)  # the old node stands for its copy for now
                return node
            self._materialize()
        if inputs is None:
            inputs = self.inputs(node)
        elif self.unchanged:
            inputs = tuple(inputs)
            mapped = tuple([self.map.get(i) for i in node.inputs])
            if len(inputs) != len(mapped) or any(a is not b for a, b in zip(inputs, mapped)):
                self.unchanged = False
        if changes:
            self.unchanged = False
            fields = {
                "op": node.op, "attrs": node.attrs, "shape": node.shape, "dtype": node.dtype,
                "name": node.name, "source": node.source,
            }
            fields.update(changes)
            return self.emit(inputs, **fields)
        unchanged = self.unchanged
        new = self.emit(inputs, op=node.op, attrs=node.attrs, shape=node.shape,
                        dtype=node.dtype, name=node.name, source=node.source)
        self.unchanged = unchanged and new.name == node.name
        return new

    def emit(self, inputs: Sequence[Node], *, op: Op, attrs: dict[str, Any],
             shape: Sequence[int | None], dtype: DTypeLike | None, name: str,
             source: str | None = None) -> Node:
        """Append a new node (its name made unique against the old and the new graph)."""
        if self._lazy:
            self._materialize()
        self.unchanged = False  # a node made here, not a copy (copy() restores the flag)
        graph = self._graph
        if name in graph._by_name:
            name = self.fresh_name(name)
        real = self._real
        if real:
            inputs = [real.get(i, i) for i in inputs]
        new = Node(op, inputs, attrs, shape, dtype, name, graph, source)
        graph.nodes.append(new)
        graph._by_name[name] = new
        graph.version += 1
        return new

    def _keeps(self, node: Node, inputs) -> bool:
        """(lazy mode) A plain copy of `node` on `inputs` would copy it unchanged: its inputs
        are old nodes that stand for their own copies."""
        m = self.map
        if inputs is None:
            for i in node.inputs:
                if m[i] is not i:
                    return False
            return True
        old = node.inputs
        if len(inputs) != len(old):
            return False
        for a, b in zip(inputs, old):
            if a is not b or m.get(b) is not b:
                return False
        return True

    def _materialize(self) -> None:
        """Make the copies a lazy rebuilder put off (the plain copies of `_kept`, in order)."""
        self._lazy = False
        graph, real = self._graph, self._real
        for old in self._kept:
            new = Node(old.op, [real[i] for i in old.inputs], old.attrs, old.shape, old.dtype,
                       old.name, graph, old.source)
            graph.nodes.append(new)
            graph._by_name[new.name] = new
            real[old] = new
        graph.version += len(self._kept)
        self._kept = []

    def fresh_name(self, base: str) -> str:
        base = base.rsplit("_", 1)[0] if base.rsplit("_", 1)[-1].isdigit() else base
        i = 0
        while True:
            name = f"{base}_c{i}"
            if name not in self.graph._by_name and name not in self.old._by_name:
                return name
            i += 1

    def constant(self, value: object, like: Node) -> Node:
        """A constant node named after `like` holding `value` (cast to `like`'s dtype).

        Graph constants live on the default backend (the one compiled programs run on)."""
        value = default_backend().asarray(value)
        if like.dtype is not None and value.dtype != like.dtype:
            value = value.astype(like.dtype)
        return self.emit((), op=_constant_op(), attrs={"value": value}, shape=value.shape,
                         dtype=value.dtype, name=like.name, source=like.source)

    def finish(self, fetches: Sequence[Node]) -> tuple[Graph, list[Node]]:
        if self.unchanged and self._copied_one_to_one():
            return self.old, list(fetches)
        if self._lazy:
            self._materialize()
        real = self._real
        return self._graph, [real.get(n, n) for n in (self.map[f] for f in fetches)]

    def _copied_one_to_one(self) -> bool:
        old = self.old.nodes
        if self._lazy:
            return len(self._kept) == len(old) and all(self.map.get(o) is o for o in old)
        new = self._graph.nodes
        return len(new) == len(old) and all(self.map.get(o) is n for o, n in zip(old, new))


def _constant_op():
    return constant_op


def numel(shape) -> int | None:
    if None in shape:
        return None
    return int(math.prod(shape))
