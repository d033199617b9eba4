"""Tensor parallelism as a rewrite of a static graph (the planner's "tensor" strategy): this
rank's copy of the graph for one set of fetches, with the Variables `sharding.py` split
replaced by this rank's shards and the tensor-parallel ops of `tensor_parallel.py` inserted
where a value must change layout (an all-reduce after a row-split product, an all-gather of a
split value an op needs whole, a local slice of a whole value read beside split ones).

Every rank runs the whole batch; each holds, computes and updates only its slice of the split
weights and of their optimizer state (`Shards`: one `dj.Variable` per split Variable, made
once from the whole Variable's value and kept for every later run). Fetches are joined: a
split value gathered, a partial one summed, so every rank gets the whole graph's values.
"""

from __future__ import annotations

import numpy as np

from ..graph.builder import variable_op
from ..graph.graph import Graph
from ..graph.variable import Variable
from .data_parallel_graph import RankGraph
from .partition import needed
from .sharding import Layouts, conversion, local_shape
from .tensor_parallel import _gather, _reduce, _reduce_scatter, _split
from .world import ensure_init

_OPS = {"gather": _gather, "reduce": _reduce, "reduce_scatter": _reduce_scatter, "split": _split}


class Shards:
    """This rank's shard of each split Variable, keyed by the whole Variable object."""

    def __init__(self):
        self.by_id: dict = {}  # id(whole Variable) -> (whole, dim, shard Variable)

    def get(self, whole, dim: int, name: str) -> Variable:
        """The shard of `whole` along `dim` (made from its current value the first time)."""
        entry = self.by_id.get(id(whole))
        if entry is None:
            world = ensure_init()
            piece = np.split(np.asarray(whole._data), world.size, axis=dim)[world.rank]
            shard = Variable(np.array(piece, copy=True), name=name,
                             trainable=getattr(whole, "trainable", True))
            entry = self.by_id[id(whole)] = (whole, dim, shard)
        return entry[2]

    def dims(self) -> dict:
        """{id(whole Variable): its split dim}, for planning later fetches in this layout."""
        return {key: dim for key, (_, dim, _) in self.by_id.items()}


def rewrite(graph: Graph, fetch_nodes: list, layouts: Layouts, shards: Shards) -> RankGraph:
    """This rank's tensor-parallel copy of `graph` for `fetch_nodes`."""
    world = ensure_init()
    g = Graph(f"{graph.name}@tensor{world.rank}")
    out = RankGraph(g, [])
    local: dict = {}
    converted: dict = {}  # (node, layout) -> its node here in that layout

    def add(op, inputs, attrs, shape, dtype, name):
        node = g.add_node(op, inputs, attrs, shape, dtype, name)
        node.rank = None
        return node

    def read(n, want):
        have = layouts.of[n]
        node = local[n]
        if (n, want) in converted:
            return converted[(n, want)]
        lay = have
        for step in conversion(have, want):
            kind, attrs = step[0], ({"dim": step[1]} if len(step) > 1 else {})
            lay = step[1] if kind in ("split", "reduce_scatter") else None
            node = add(_OPS[kind], (node,), attrs, local_shape(n, lay, world.size), n.dtype,
                       f"{n.name}_{kind}")
        converted[(n, want)] = node
        return node

    for n in needed(fetch_nodes):
        lay = layouts.of[n]
        attrs = n.attrs
        if n.op.name == "variable" and n in layouts.shards:
            shard = shards.get(n.attrs["ref"], layouts.shards[n], n.name)
            local[n] = add(variable_op, (), {"ref": shard}, shard._data.shape, n.dtype, n.name)
            continue
        if n.op.name == "assign" and n.inputs[0] in layouts.shards:
            attrs = dict(attrs, ref=local[n.inputs[0]].attrs["ref"])
        wants = layouts.inputs.get(n, [])
        inputs = [local[i] if i.dtype is None else read(i, w) for i, w in zip(n.inputs, wants)]
        node = add(n.op, inputs, attrs, local_shape(n, lay, world.size), n.dtype, n.name)
        if n.op.name == "placeholder":
            out.placeholders[n] = node
        local[n] = node
    for f in fetch_nodes:
        out.fetches.append(local[f] if f.dtype is None else read(f, None))
    return out
