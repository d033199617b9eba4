"""`dj.Session(g, distribute="auto")`: the planner (`dongjing/distributed/planner.py`) chooses
how the session's first set of fetches runs over the MPI world, once, at its first run; later
runs reuse the plan and its compiled programs (the planning is paid once, amortized over every
run). Other fetches are planned at their first run in the same layout (the Variables stay on
the ranks the first plan put them on).

- "single" (one process) and "replicated": the Session runs the whole graph, as without
  `distribute`;
- "pipeline": this rank runs its partition of the graph (`partitioned.PartitionedRun`), with
  the planner's placement, or in the plan's micro-batches (`pipelined.MicroBatchedRun`: the
  planner chose the chunks and schedule, or the Session's `pipeline_chunks=` and
  `pipeline_schedule=` fixed them);
- "data": this rank runs its data-parallel copy of the graph (`data_parallel_graph.py`) on its
  share of the batch rows;
- "tensor": this rank runs its tensor-parallel copy of the graph (`tensor_parallel_graph.py`),
  holding and updating its shards of the split Variables (kept here for every later run;
  `plan.shards` names them; the whole Variables are no longer updated).

Every rank must run the same fetches with the same feeds, as with placed graphs.
"""

from __future__ import annotations

from ..distributed import data_parallel_graph, planner, tensor_parallel_graph
from ..distributed.cost_model import CostModel
from ..distributed.world import ensure_init, wait
from . import feeds, partitioned, pipelined
from .fetch_structure import rebuilder


def measure_agreed() -> CostModel:
    """This machine's cost figures, measured now, with rank 0's figures on every rank (so that
    every rank makes the same plan)."""
    model = CostModel.measure()
    world = ensure_init()
    if world.size > 1:
        figures = model.as_array()
        wait(world.comm.Ibcast(figures, root=0), "distribute='auto'")
        model = model.with_figures(figures)
    return model


class _DataParallelRun:
    """This rank's data-parallel copy of the graph for one fetch structure."""

    def __init__(self, session, fetches, facts, session_type):
        leaves: list = []
        self.rebuild = rebuilder(fetches, leaves)
        self.graph = session.graph
        fetch_nodes = [session._fetch_node(f) for f in leaves]
        self.copy = data_parallel_graph.rewrite(self.graph, fetch_nodes, facts.gradients,
                                                facts.batch_inputs)
        self.session = session_type(self.copy.graph, optimize=session.optimize)
        self.values = [n for n in self.copy.fetches if n is not None]

    def __call__(self, feed_dict):
        world = ensure_init()
        local = {}
        for key, value in (feed_dict or {}).items():
            node = feeds.resolve_key(self.graph, key)
            here = self.copy.placeholders.get(node)
            if here is not None:
                if node in self.copy.batch_inputs:
                    value = data_parallel_graph.rows(value, world.rank, world.size)
                local[here] = value
        got = iter(self.session.run(self.values, local))
        return self.rebuild([None if n is None else next(got) for n in self.copy.fetches])


class _TensorParallelRun:
    """This rank's tensor-parallel copy of the graph for one fetch structure."""

    def __init__(self, session, fetches, plan, shards, session_type):
        leaves: list = []
        self.rebuild = rebuilder(fetches, leaves)
        self.graph = session.graph
        fetch_nodes = [session._fetch_node(f) for f in leaves]
        self.copy = tensor_parallel_graph.rewrite(self.graph, fetch_nodes, plan.layouts, shards)
        self.session = session_type(self.copy.graph, optimize=session.optimize)
        self.values = [n for n in self.copy.fetches if n is not None]
        plan.shards = {v.name: shards.get(v.attrs["ref"], d, v.name)
                       for v, d in plan.layouts.shards.items()}

    def __call__(self, feed_dict):
        local = {}
        for key, value in (feed_dict or {}).items():
            here = self.copy.placeholders.get(feeds.resolve_key(self.graph, key))
            if here is not None:
                local[here] = value
        got = iter(self.session.run(self.values, local))
        return self.rebuild([None if n is None else next(got) for n in self.copy.fetches])


class AutoDistribute:
    """A Session's planner and the runs of the plans it chose, per fetch structure."""

    def __init__(self, session, max_memory=None, cost_model: CostModel | None = None):
        if cost_model is not None and not isinstance(cost_model, CostModel):
            raise TypeError(f"dj.Session: cost_model must be a dj.distributed.CostModel, got "
                            f"{type(cost_model).__name__}")
        self.session = session
        self.max_memory = planner.parse_memory(max_memory)
        self.given = cost_model
        self.measured: CostModel | None = None
        self.plan = None  # the plan of the latest run
        self.first = None  # the first plan: later fetches keep where it put the Variables
        self.runs: dict = {}  # run key -> (graph version, plan, runner or None)
        self.shards = tensor_parallel_graph.Shards()  # a tensor plan's shards of Variables

    def cost_model(self) -> CostModel:
        """The given model, else this machine's, measured once (rank 0's figures on every rank,
        so that every rank makes the same plan)."""
        if self.given is not None:
            return self.given
        if self.measured is None:
            self.measured = measure_agreed()
        return self.measured

    def run(self, fetches, feed_dict, key, session_type):
        """(True, values) when the plan runs here; (False, None) when the Session should run
        the whole graph itself."""
        graph = self.session.graph
        entry = self.runs.get(key)
        if entry is None or entry[0] != graph.version:
            entry = self.runs[key] = (graph.version,) + self._prepare(fetches, feed_dict,
                                                                      session_type)
        self.plan, runner = entry[1], entry[2]
        if runner is None:
            return False, None
        return True, runner(feed_dict)

    def _prepare(self, fetches, feed_dict, session_type):
        session, graph = self.session, self.session.graph
        leaves: list = []
        rebuilder(fetches, leaves)
        fetch_nodes = [session._fetch_node(f) for f in leaves]
        fed_rows = {}
        for k, value in (feed_dict or {}).items():
            shape = getattr(value, "shape", None)
            if shape:
                fed_rows[feeds.resolve_key(graph, k)] = int(shape[0])
        facts = planner.analyse(graph, fetch_nodes, fed_rows)
        world = ensure_init()
        plan = planner.choose(facts, self.cost_model(), world.size, fetch_nodes,
                              self.max_memory, follow=self.first,
                              chunks=session.pipeline_chunks,
                              schedule=session.pipeline_schedule)
        self.first = self.first or plan
        if plan.strategy == "pipeline" and plan.chunks > 1:
            runner = pipelined.MicroBatchedRun(session, fetches, feed_dict, session_type,
                                               plan.chunks, plan.pipeline_schedule,
                                               placement=plan.placement)
        elif plan.strategy == "pipeline":
            runner = partitioned.PartitionedRun(session, fetches, feed_dict, session_type,
                                                placement=plan.placement)
        elif plan.strategy == "data":
            runner = _DataParallelRun(session, fetches, facts, session_type)
        elif plan.strategy == "tensor":
            runner = _TensorParallelRun(session, fetches, plan, self.shards, session_type)
        else:
            runner = None
        return plan, runner
