"""`Session.run` of a graph whose nodes are placed on MPI ranks: every rank runs its own
compiled partition (`dongjing/distributed/partition.py`) and gets every fetch.

Every rank must call `run` with the same fetches and feeds (SPMD, as with collectives). With
one process the whole graph runs here as if unplaced, which is the result a run on several
ranks must equal.
"""

from __future__ import annotations

from ..distributed import graph_ops
from ..distributed.partition import is_placed, partition
from ..distributed.world import ensure_init
from ..errors import FeedError
from . import feeds
from .fetch_structure import rebuilder


def placed(session) -> bool:
    """Whether `session`'s graph has placed nodes and more than one rank runs it."""
    graph = session.graph
    if getattr(session, "_placed_version", None) != graph.version:
        session._placed = is_placed(graph)
        session._placed_version = graph.version
    return session._placed and ensure_init().size > 1


class PartitionedRun:
    """This rank's partition for one fetch structure, compiled by an inner Session."""

    def __init__(self, session, fetches, feed_dict, session_type, placement=None):
        world = ensure_init()
        leaves: list = []
        self.rebuild = rebuilder(fetches, leaves)
        self.graph, self.version = session.graph, session.graph.version
        fetch_nodes = [session._fetch_node(f) for f in leaves]
        for key in feed_dict or ():
            node = feeds.resolve_key(self.graph, key)
            if node.op.name != "placeholder":
                raise FeedError(f"feed_dict key {node.name!r}: a graph placed on ranks is fed "
                                "through its placeholders only")
        self.part = partition(self.graph, fetch_nodes, world.rank, world.size, placement)
        self.session = session_type(self.part.graph, optimize=session.optimize)
        self.values = [n for n in self.part.fetches if n is not None]
        self.targets = self.values + self.part.sends

    def __call__(self, feed_dict):
        local = {}
        for key, value in (feed_dict or {}).items():
            node = self.part.placeholders.get(feeds.resolve_key(self.graph, key))
            if node is not None:
                local[node] = value
        try:
            out = self.session.run(self.targets, local)
        finally:
            graph_ops.finish_sends()
        got = iter(out[:len(self.values)])
        return self.rebuild([None if n is None else next(got) for n in self.part.fetches])
