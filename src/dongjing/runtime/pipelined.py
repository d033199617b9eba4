"""`Session.run` in micro-batches (`dj.Session(g, pipeline_chunks=M)`): the batch rows split into
M micro-batches, each rank running the forward and backward of each micro-batch in the order of
a GPipe or 1F1B schedule (`distributed/schedules.py`), the gradients summed over the
micro-batches (weighted by their rows) and the update applied once per step.

Each rank runs its partition of a placed graph (or of the planner's placement), cut into three
phase graphs (`distributed/micro_batches.py`), each compiled once. Values a later phase reads
are kept between the runs (a micro-batch's activations until its backward has run). A fetch is
computed where its rank holds it, combined over the micro-batches (rows joined, a float value
row-weighted, an integer summed, a value independent of the rows taken once), then sent to
every rank. Unplaced graphs, or one process, run every stage here: gradient accumulation.
Losses must be means over the batch rows (as for data parallelism).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import profiler_hooks as hooks
from ..distributed import graph_ops, p2p
from ..distributed.micro_batches import (
    BACKWARD,
    FORWARD,
    UPDATE,
    check_stage_order,
    classify,
    local_phases,
    split,
)
from ..distributed.partition import COPIED, is_placed, needed, partition
from ..distributed.schedules import schedule_order
from ..distributed.world import DistributedError, ensure_init
from ..errors import FeedError
from . import feeds
from .fetch_structure import rebuilder

if TYPE_CHECKING:
    from .session import Session


def reads_batch(session: Session, fetches: Any) -> bool:
    """Whether `fetches` read a batch input (a placeholder whose first dim is None)."""
    leaves: list = []
    rebuilder(fetches, leaves)
    return any(n.op.name == "placeholder" and n.shape and n.shape[0] is None
               for n in needed([session._fetch_node(f) for f in leaves]))


class MicroBatchedRun:
    """This rank's share of one fetch structure's step, in `chunks` micro-batches."""

    def __init__(self, session: Session, fetches: Any, feed_dict: Mapping[Any, Any] | None,
                 session_type: type, chunks: int, schedule: str,
                 placement: dict | None = None) -> None:
        world = ensure_init()
        leaves: list = []
        self.rebuild = rebuilder(fetches, leaves)
        self.graph, self.version = session.graph, session.graph.version
        self.chunks, self.schedule = chunks, schedule
        self.fetch_nodes = [session._fetch_node(f) for f in leaves]
        for key in feed_dict or ():
            node = feeds.resolve_key(self.graph, key)
            if node.op.name != "placeholder":
                raise FeedError(f"feed_dict key {node.name!r}: a run in micro-batches is fed "
                                "through the graph's placeholders only")
        spread = world.size > 1 and (placement is not None or is_placed(self.graph))
        self.stage, self.stages = (world.rank, world.size) if spread else (0, 1)
        order = needed(self.fetch_nodes)
        self.batch_inputs = [n for n in order if n.op.name == "placeholder" and n.shape
                             and n.shape[0] is None]
        if not self.batch_inputs:
            raise DistributedError(f"pipeline_chunks={chunks}: the fetches read no batch input "
                                   "(a placeholder whose first dim is None) to split into "
                                   "micro-batches")
        self.phases = classify(self.graph, order, self.batch_inputs)
        self.part = partition(self.graph, self.fetch_nodes, self.stage, self.stages,
                              placement if spread else {}, share_fetches=False)
        self.local_fetches = self.part.fetches
        self.of = local_phases(self.part, self.phases, self.stage)
        if schedule == "1f1b":
            check_stage_order(order, self.part.ranks, self.phases)
        self.graphs = split(self.part, self.of, self.phases, self.local_fetches)
        self.sessions = [session_type(pg.graph, optimize=session.optimize) if pg.targets
                         else None for pg in self.graphs]
        self.back = [{v: k for k, v in pg.local.items()} for pg in self.graphs]
        self.fed_as = {v: k for k, v in self.part.placeholders.items()}  # here -> the graph's
        for f in self.fetch_nodes:
            if (f in self.phases.batched and f.dtype is not None and np.dtype(f.dtype).kind == "b"
                    and not (f.shape and f.shape[0] is None)):
                raise DistributedError(f"pipeline_chunks={chunks}: fetch {f.name!r} is a bool "
                                       "computed from the batch rows; its micro-batches' values "
                                       "do not combine into the batch's")
        self.comm = None
        if spread:
            limit = world.comm.Get_attr(world.mpi.TAG_UB)
            if (chunks + 1) * self.part.tags > limit:
                raise DistributedError(f"pipeline_chunks={chunks}: {chunks + 1} ranges of "
                                       f"{self.part.tags} message tags exceed MPI's TAG_UB "
                                       f"{limit}; use fewer micro-batches")
            self.comm = world.comm.Dup()  # the fetches' messages never meet anyone else's

    def _bounds(self, values: dict) -> list[int]:
        rows = {}
        for node in self.batch_inputs:
            if node in values:
                shape = np.shape(values[node])
                if not shape:
                    raise FeedError(f"placeholder {node.name!r}: a batch input is fed a "
                                    "value without rows")
                rows[node.name] = shape[0]
        if len(set(rows.values())) > 1:
            raise FeedError(f"pipeline_chunks={self.chunks}: the batch inputs are fed different "
                            f"row counts {rows}; feed each the same rows")
        count = next(iter(rows.values()), 0)
        if count < self.chunks:
            raise DistributedError(f"pipeline_chunks={self.chunks}: a batch of {count} rows "
                                   f"cannot make {self.chunks} micro-batches")
        sizes = [len(a) for a in np.array_split(np.arange(count), self.chunks)]
        return [int(b) for b in np.cumsum([0] + sizes)]

    def __call__(self, feed_dict: Mapping[Any, Any] | None) -> Any:
        given = {feeds.resolve_key(self.graph, k): v for k, v in (feed_dict or {}).items()}
        bounds = self._bounds(given)
        total = bounds[-1]
        state = _StepState(self, given, bounds)
        try:
            for kind, m in schedule_order(self.schedule, self.stage, self.stages, self.chunks):
                start = hooks.clock() if hooks.on else None
                phase = FORWARD if kind == "F" else BACKWARD
                with graph_ops.tag_offset(m * self.part.tags):
                    state.run(phase, m)
                if start is not None and hooks.on:  # a range on dj.profiler's timeline
                    hooks.emit(start, hooks.clock(), "pipeline", f"{kind}{m}",
                               {"stage": self.stage, "micro_batch": m})
            with graph_ops.tag_offset(self.chunks * self.part.tags):
                state.run(UPDATE, None)
        finally:
            graph_ops.finish_sends()
        values = [state.combine(f, local, total) for f, local in
                  zip(self.fetch_nodes, self.local_fetches)]
        return self.rebuild(self._share(values))

    def _share(self, values: list) -> list:
        """Every fetch on every rank: sent by the rank that computed it."""
        if self.comm is None:
            return values
        sender = p2p.Sender(self.comm)
        for i, f in enumerate(self.fetch_nodes):
            owner = self.part.ranks.get(f, COPIED)
            if f.dtype is None or owner == COPIED:
                continue
            if owner == self.stage:
                for r in range(self.stages):
                    if r != owner:
                        sender.send(np.asarray(values[i]), r, i, f"fetch {f.name!r}")
            else:
                values[i] = p2p.recv(self.comm, owner, i, f"fetch {f.name!r} from rank {owner}")
        sender.finish("the fetches")
        return values


class _StepState:
    """One step's values on one rank: what each micro-batch keeps for its backward, the
    summed gradients, and each fetch's micro-batch values."""

    def __init__(self, run: MicroBatchedRun, given: dict, bounds: list[int]):
        self.run_, self.given, self.bounds = run, given, bounds
        self.kept: dict = {}  # micro-batch -> {partition node: value}
        self.once: dict = {}  # values independent of the rows: partition node -> value
        self.summed: dict = {}  # gradient (partition node) -> sum over the micro-batches
        self.pieces: dict = {}  # fetched partition node -> {micro-batch: value}
        self.updated: dict = {}  # partition node -> value from the update

    def _feed(self, pg, m):
        run, feed = self.run_, {}
        for here, there in pg.feeds.items():
            origin = run.fed_as[there]
            if origin not in self.given:
                continue  # Session.run names the missing placeholder
            value = self.given[origin]
            if m is not None and origin in run.batch_inputs:
                value = np.asarray(value)[self.bounds[m]:self.bounds[m + 1]]
            feed[here] = value
        for here, there in pg.saved.items():
            if m is None:
                if there not in self.once:
                    raise DistributedError(f"micro-batches: the update reads {there.name!r}, "
                                           "which is computed from the batch rows")
                feed[here] = self.once[there]
            else:
                feed[here] = self.kept[m][there] if there in self.kept.get(m, {}) \
                    else self.once[there]
        for here, there in pg.gradients.items():
            feed[here] = self.summed[there]
        return feed

    def run(self, phase: int, m: int | None) -> None:
        run = self.run_
        pg, session = run.graphs[phase], run.sessions[phase]
        if session is not None:
            out = session.run(pg.targets, self._feed(pg, m))
            weight = None if m is None else (self.bounds[m + 1] - self.bounds[m]) / self.bounds[-1]
            for node, value in zip(pg.targets, out):
                there = run.back[phase][node]
                if value is None:
                    continue
                origin = run.part.origin.get(there, there)
                if m is None:
                    self.updated[there] = value
                    continue
                if origin not in run.phases.batched:
                    self.once[there] = value
                self.kept.setdefault(m, {})[there] = value
                if origin in run.phases.gradients and phase == BACKWARD:
                    part = np.asarray(value) * np.asarray(weight, np.asarray(value).dtype)
                    self.summed[there] = part if there not in self.summed else (
                        self.summed[there] + part)
                if there in run.local_fetches:
                    self.pieces.setdefault(there, {})[m] = value
        if phase == BACKWARD:
            self.kept.pop(m, None)  # this micro-batch's activations are no longer needed

    def combine(self, f, local, total: int):
        """The whole batch's value of fetch `f` (this rank's node `local`)."""
        run = self.run_
        if f.dtype is None or local is None:
            return None
        if local in self.updated:
            return self.updated[local]
        if local in self.summed:
            return self.summed[local]
        pieces = self.pieces.get(local, {})
        parts = [pieces[m] for m in sorted(pieces)]
        if f not in run.phases.batched or len(parts) == 1 and run.chunks == 1:
            return parts[0]
        weights = [(self.bounds[m + 1] - self.bounds[m]) / total for m in sorted(pieces)]
        backward = run.of.get(local) == BACKWARD
        if f.shape and f.shape[0] is None:
            if backward:  # a gradient's rows: each micro-batch's loss was its own rows' mean
                parts = [np.asarray(p) * np.asarray(w, np.asarray(p).dtype)
                         for p, w in zip(parts, weights)]
            return np.concatenate([np.asarray(p) for p in parts], axis=0)
        kind = np.dtype(f.dtype).kind
        if kind in "iu":
            return sum(parts[1:], np.asarray(parts[0]))
        result = None
        for p, w in zip(parts, weights):
            part = np.asarray(p) * np.asarray(w, np.asarray(p).dtype)
            result = part if result is None else result + part
        return result
