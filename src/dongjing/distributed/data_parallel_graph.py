"""Data parallelism as a rewrite of a static graph: this rank's copy of the graph for one set of
fetches, run on its share of the batch rows (the planner's "data" strategy).

The copy differs from the graph in three places:
- each placeholder whose first dim is the batch is fed this rank's rows (`rows`);
- the gradients of Variables (what `dj.gradients` recorded in `graph.gradient_of`) are
  averaged over the ranks by bucketed `all_reduce` ops (`all_reduce_gradients`: one message
  per bucket), before the first node that reads one, so the updates are the same on every rank
  and equal the whole batch's (for a loss that is a mean over the batch rows);
- each fetch computed from the rows is joined: one whose first dim is the batch is gathered
  (every rank gets all rows, in order), any other float value averaged, an integer summed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..graph.graph import Graph
from ..tensor import Tensor
from .functional import _all_reduce
from .gradients import all_reduce_gradients
from .partition import needed
from .tensor_parallel import _gather
from .world import ensure_init


@dataclass
class RankGraph:
    """This rank's copy of the graph, and how to feed it."""

    graph: Graph
    fetches: list  # per fetch of the whole graph: its node here (None for an absent effect)
    placeholders: dict = field(default_factory=dict)  # placeholder of the graph -> here
    batch_inputs: set = field(default_factory=set)  # placeholders fed this rank's rows


def rewrite(graph: Graph, fetch_nodes: list, gradients: dict, batch_inputs: list,
            averaged: frozenset = frozenset()) -> RankGraph:
    """This rank's data-parallel copy of `graph` for `fetch_nodes`; each node of `averaged`
    (per-rank statistics a Variable is set to, say) is averaged over the ranks as computed."""
    g = Graph(f"{graph.name}@data{ensure_init().rank}")
    out = RankGraph(g, [], batch_inputs=set(batch_inputs))
    local, sharded, pending = {}, set(), []  # pending: gradients copied, not yet averaged

    def add(op, inputs, attrs, like, name):
        node = g.add_node(op, inputs, attrs, like.shape, like.dtype, name)
        node.rank = None
        return node

    def average():
        with g.as_default():
            means = all_reduce_gradients([Tensor._symbolic(local[n]) for n in pending])
        local.update((n, t._node) for n, t in zip(pending, means))
        pending.clear()

    for n in needed(fetch_nodes):
        if pending and any(i in pending for i in n.inputs):
            average()
        node = add(n.op, [local[i] for i in n.inputs], n.attrs, n, n.name)
        if n.op.name == "placeholder":
            out.placeholders[n] = node
        if n in gradients:
            pending.append(n)
        elif n in out.batch_inputs or any(i in sharded for i in n.inputs):
            sharded.add(n)
        if n in averaged:
            node = add(_all_reduce, (node,), {"reduce": "mean"}, n, f"{n.name}_mean")
        local[n] = node
    if pending:
        average()
    for f in fetch_nodes:
        node = local[f]
        if f in sharded and f.dtype is not None:
            if f.shape and f.shape[0] is None:
                node = add(_gather, (node,), {"dim": 0}, f, f"{f.name}_rows")
            else:
                kind = "mean" if np.dtype(f.dtype).kind == "f" else "sum"
                node = add(_all_reduce, (node,), {"reduce": kind}, f, f"{f.name}_{kind}")
        out.fetches.append(node)
    return out


def rows(value, rank: int, world: int):
    """This rank's share of a fed batch (the first dim split evenly)."""
    array = np.asarray(value)
    share = array.shape[0] // world
    return array[rank * share:(rank + 1) * share]
