"""Splitting a static graph over MPI ranks at its cut edges.

Every rank builds the same graph; nodes carry the rank `with dj.device("rank:N")` placed them on
(`Node.rank`). For one set of fetches, `partition` decides a rank for every node the fetches
need and builds this rank's own graph: its nodes, a `recv` where it reads a value computed on
another rank and a `send` where another rank reads one of its values (`graph_ops.py`). Each
rank then compiles and runs its partition; all of them together compute what the whole graph
computes in one process.

Where an unplaced node goes (TensorFlow's placer colocates the same way):
- placeholders and constants are copied onto every rank that reads them (every rank is fed
  the same feed_dict), and so are `group`s, each rank's holding its own effects, and
  Variables only ever set to constants (compat.v1's "initialized" flags) with their settings;
- a Variable goes to the rank of its first reader (its value lives there), an assignment to its
  Variable's rank (so the update happens where the value lives);
- gradient nodes were placed with the forward op they differentiate (`graph/gradients.py`);
- any other node goes to the rank of its first placed input, else rank 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.registry import Kind
from ..graph.graph import Graph, Node
from .graph_ops import recv_op, send_op
from .world import DistributedError

COPIED = -1  # placeholders, constants, groups: a copy on every rank that needs one
_TAG_LIMIT = 32767  # MPI guarantees tags up to this


@dataclass
class Partition:
    """This rank's share of the graph for one set of fetches."""

    graph: Graph
    fetches: list  # per fetch of the whole graph: its node here (a local value or a recv)
    sends: list = field(default_factory=list)  # send nodes: run them with the fetches
    placeholders: dict = field(default_factory=dict)  # placeholder of the whole graph -> here
    ranks: dict = field(default_factory=dict)  # node of the whole graph -> its rank
    origin: dict = field(default_factory=dict)  # node here -> the node of the whole graph it
    # computes (for a send or recv: the value it carries)
    tags: int = 0  # message tags used: one per node of the whole graph the fetches need


def is_placed(graph: Graph) -> bool:
    """Whether any node of `graph` was placed on a rank."""
    return any(n.rank is not None for n in graph.nodes)


def needed(fetch_nodes) -> list[Node]:
    """The nodes the fetches depend on, in graph order (the order they were built)."""
    seen: set = set()
    stack = list(fetch_nodes)
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(node.inputs)
    return sorted(seen, key=lambda n: n.id)


def _is_assign(node) -> bool:
    return node.op.kind == Kind.EFFECT and "ref" in node.attrs


def assign_ranks(order: list[Node], world_size: int, placement: dict | None = None) -> dict:
    """A rank for every node of `order` (COPIED for the ones every rank copies).

    `placement` (node -> rank), when given, replaces the ranks `dj.device` gave the nodes: the
    planner's choice (`planner.py`); nodes it leaves out count as unplaced."""
    def chosen(n):
        return n.rank if placement is None else placement.get(n)

    rank: dict = {}
    for n in order:
        if n.op.kind == Kind.CONTROL:
            raise DistributedError(f"placing a graph on ranks: {n.op.name} node {n.name!r} runs "
                                   "sub-graphs, which the partitioner does not split yet")
        where = chosen(n)
        if where is not None and not (0 <= where < world_size):
            raise DistributedError(f"node {n.name!r} is placed on rank {where}, but the world "
                                   f"has {world_size} rank(s) (run it under mpiexec -n "
                                   f"{where + 1} or more)")
        if n.op.name in ("placeholder", "constant") or (n.op.kind == Kind.EFFECT
                                                      and not _is_assign(n)):
            rank[n] = COPIED
        elif n.op.name == "variable" or _is_assign(n):
            rank[n] = where  # decided below unless placed
        elif where is not None:
            rank[n] = where
        else:
            placed = [rank[i] for i in n.inputs if rank.get(i) is not None and rank[i] >= 0]
            rank[n] = placed[0] if placed else 0
    for n in order:  # an unplaced Variable only ever set to constants: a copy on every rank
        if n.op.name == "variable" and chosen(n) is None:
            sets = [a for a in order if _is_assign(a) and a.inputs[0] is n]
            if sets and all(rank[a.inputs[1]] == COPIED for a in sets):
                rank[n] = COPIED
                rank.update(dict.fromkeys(sets, COPIED))
    for n in order:  # a Variable lives with its first reader
        if rank[n] is None or rank[n] < 0 or _is_assign(n):
            continue
        for i in n.inputs:
            if i.op.name == "variable" and rank[i] is None:
                rank[i] = rank[n]
    for n in order:
        if n.op.name == "variable" and rank[n] is None:
            rank[n] = 0
        if _is_assign(n) and rank[n] != COPIED:
            rank[n] = rank[n.inputs[0]]  # the update happens where the value lives
    return rank


def partition(graph: Graph, fetch_nodes: list, my_rank: int, world_size: int,
              placement: dict | None = None, share_fetches: bool = True) -> Partition:
    """This rank's partition of `graph` for `fetch_nodes` (every rank gets every fetch);
    `placement` as for `assign_ranks`. With `share_fetches=False` a fetch stays on the rank
    that computes it (None in `fetches` elsewhere): the caller shares it."""
    order = needed(fetch_nodes)
    rank = assign_ranks(order, world_size, placement)
    tags = {n: i for i, n in enumerate(order)}
    if len(order) > _TAG_LIMIT:
        raise DistributedError(f"placing a graph on ranks: {len(order)} nodes are more than "
                               f"the {_TAG_LIMIT} message tags MPI guarantees")
    readers: dict = {}  # value node -> the ranks reading it
    for n in order:
        if rank[n] == COPIED:
            continue  # a group keeps the effects of its own rank; sources are copied
        for i in n.inputs:
            if rank[i] != COPIED and rank[i] != rank[n]:
                if i.dtype is None:
                    raise DistributedError(f"node {n.name!r} on rank {rank[n]} depends on the "
                                           f"effect {i.name!r} on rank {rank[i]}; group "
                                           "effects with dj.group instead")
                readers.setdefault(i, set()).add(rank[n])
    for f in fetch_nodes:
        if share_fetches and f.dtype is not None and rank[f] != COPIED:
            readers.setdefault(f, set()).update(range(world_size))

    part = Partition(Graph(f"{graph.name}@rank{my_rank}"), [], ranks=rank, tags=len(order))
    g, local, received = part.graph, {}, {}

    def copy(n, inputs):
        node = g.add_node(n.op, inputs, n.attrs, n.shape, n.dtype, n.name)
        node.rank = None
        part.origin[node] = n
        return node

    def get(u):
        if u in local:
            return local[u]
        if rank[u] == COPIED:
            local[u] = copy(u, [get(i) for i in u.inputs])
            if u.op.name == "placeholder":
                part.placeholders[u] = local[u]
            return local[u]
        if u not in received:
            attrs = {"source": rank[u], "tag": tags[u], "shape": u.shape, "dtype": u.dtype}
            received[u] = g.add_node(recv_op, (), attrs, u.shape, u.dtype, f"recv_{u.name}")
            received[u].rank = None
            part.origin[received[u]] = u
        return received[u]

    for n in order:
        if rank[n] == COPIED:
            if _is_assign(n):  # setting a copied Variable: on every rank
                local[n] = copy(n, [get(i) for i in n.inputs])
            elif n.op.kind == Kind.EFFECT:  # a group: the effects of this rank
                mine = [local[i] for i in n.inputs if i in local]
                if mine:
                    local[n] = copy(n, mine)
            continue
        if rank[n] != my_rank:
            continue
        local[n] = copy(n, [get(i) for i in n.inputs])
        for dest in sorted(readers.get(n, set()) - {my_rank}):
            attrs = {"dest": dest, "tag": tags[n]}
            send = g.add_node(send_op, (local[n],), attrs, (), None, f"send_{n.name}")
            send.rank = None
            part.origin[send] = n
            part.sends.append(send)
    for f in fetch_nodes:
        if f.dtype is None or (not share_fetches and rank[f] not in (COPIED, my_rank)):
            part.fetches.append(local.get(f))
        else:
            part.fetches.append(get(f))
    return part
