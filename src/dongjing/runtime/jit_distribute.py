"""`dj.jit(fn, distribute="auto")`: each traced signature of a jitted function is planned once,
by the planner `dj.Session(g, distribute="auto")` uses, for the MPI world it runs in; every call
then runs this rank's part of the plan.

A trace holds the call's concrete shapes, so the planner reads a view of it in which the batch
dim is unknown (`planning_view`): the batch inputs are the tensor arguments whose first dim is
the first tensor argument's. What each plan runs:

- "single" (one process), "replicated": the trace itself, as plain `dj.jit` runs it;
- "data": a second trace of the function on this rank's share of the batch rows, its gradients
  averaged over the ranks (`data_parallel_graph.rewrite`); results computed from the rows are
  joined (gathered when their first dim is the rows, else averaged, an integer summed);
- "pipeline": this rank's partition of the trace (`partition.partition`);
- "tensor": this rank's tensor-parallel copy of the trace (`tensor_parallel_graph.rewrite`),
  its shards cut from the eager Parameters before each call.

The state of a jitted step is the eager model: after every call each rank's Parameters (and
optimizer state) hold the current values and their `.grad` the step's gradients. A data plan
updates them on every rank alike; a pipeline or tensor plan sends each updated Variable, and
each gradient, from where it was computed to every rank (priced in the plan).
"""

from __future__ import annotations

import functools
import types
import weakref
from typing import Any

import numpy as np

from ..autograd.grad_mode import state as grad_state
from ..backends import is_array
from ..core.registry import Kind
from ..distributed import data_parallel_graph, graph_ops, planner, tensor_parallel_graph
from ..distributed.cost_model import CostModel, value_bytes
from ..distributed.functional import _all_reduce
from ..distributed.partition import COPIED, needed, partition
from ..distributed.plan import Plan
from ..distributed.sharding import Layouts
from ..distributed.tensor_parallel import _gather
from ..distributed.world import DistributedError, ensure_init, wait
from ..graph import builder
from ..graph.graph import Graph
from ..graph.program import commit_assignments
from ..ops.state import group
from ..tensor import Tensor, grad_scope
from .auto_distribute import measure_agreed
from .session import Session
from .signature import map_tensors
from .tracing import Trace


class DistributedJitFunction:
    """A jitted function whose calls run over the MPI world as the planner chose (see
    `dj.jit(..., distribute="auto")`); `.plan` is the plan of the latest call. Everything else
    (`.graph(*args)`, `.retrace_reasons`, a jitted module's `.parameters()`, ...) is the plain
    jitted function's."""

    def __init__(self, inner, max_memory: float | str | None = None,
                 cost_model: CostModel | None = None) -> None:
        if cost_model is not None and not isinstance(cost_model, CostModel):
            raise TypeError(f"dj.jit: cost_model must be a dj.distributed.CostModel, got "
                            f"{type(cost_model).__name__}")
        self.inner = inner
        self.max_memory = planner.parse_memory(max_memory)
        self.given = cost_model
        self.measured: CostModel | None = None
        self.plan: Plan | None = None  # the plan of the latest call
        self._runs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # trace -> run
        functools.update_wrapper(self, inner, updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        inner = self.inner
        if builder.state.graph is not None or grad_scope.current is not None:
            return inner.fn(*args, **kwargs)  # inside a graph or another trace: inline
        arrays: list = []
        trace = inner._trace_for(args, kwargs, arrays)
        run = self._runs.get(trace)
        if run is None:
            run = self._runs[trace] = self._prepare(trace, arrays, args, kwargs)
        self.plan = run.plan
        if run.runner is None:
            return inner._run(trace, arrays, args, kwargs)
        if grad_state.grad_enabled and trace.differentiable:
            raise DistributedError(
                f"dj.jit({inner.name}, distribute='auto'): plan {run.plan.strategy}: the "
                "results would carry gradients back to the caller, which a distributed plan "
                "does not provide; call loss.backward() and opt.step() inside the jitted "
                "function, or call it under dj.no_grad()")
        return run.runner(arrays, args, kwargs)

    def cost_model(self) -> CostModel:
        """The given cost model, else this machine's, measured once (rank 0's on every rank)."""
        if self.given is not None:
            return self.given
        if self.measured is None:
            self.measured = measure_agreed()
        return self.measured

    def _prepare(self, trace: Trace, arrays: list, args: tuple, kwargs: dict):
        """Plan `trace` for this world and build this rank's runner (None: run the trace)."""
        world = ensure_init()
        plan, original, batch_inputs = plan_trace(trace, self.cost_model(), world.size,
                                                  self.max_memory)
        where = f"dj.jit({self.inner.name}, distribute='auto'): plan {plan.strategy}"
        if plan.strategy == "data":
            runner = DataRun(self.inner, trace, args, kwargs, batch_inputs, world, where)
        elif plan.strategy == "pipeline":
            plan.placement = {original[n]: r for n, r in plan.placement.items()
                              if n in original}
            runner = PipelineRun(trace, plan.placement, self.inner.optimize, world)
        elif plan.strategy == "tensor":
            plan.layouts = original_layouts(plan.layouts, original)
            runner = TensorRun(trace, plan.layouts, self.inner.optimize, world)
        else:
            runner = None
        if runner is not None and runner.synced:
            _price_state_sync(plan, runner, self.cost_model(), world.size)
        return types.SimpleNamespace(plan=plan, runner=runner)

    def __get__(self, obj, objtype=None):
        """As a method: `self` is the first argument."""
        return self if obj is None else types.MethodType(self, obj)

    def __getattr__(self, name: str):
        inner = self.__dict__.get("inner")
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)

    def __repr__(self) -> str:
        strategy = self.plan.strategy if self.plan is not None else "not planned yet"
        return f"<dj.jit {self.inner.name} distribute='auto' ({strategy})>"


def plan_trace(trace: Trace, model: CostModel, world: int,
               max_memory: int | None = None) -> tuple[Plan, dict, list]:
    """The planner's choice for `trace` over `world` ranks; also the map from the planning
    view's nodes to the trace's and the trace's batch inputs."""
    facts, fetches, original, batch_inputs = analyse_trace(trace)
    plan = planner.choose(facts, model, world, fetches, max_memory)
    return plan, original, batch_inputs


def analyse_trace(trace: Trace) -> tuple[planner.Facts, list, dict, list]:
    """The planner's facts of `trace` read off its planning view, the view's fetches (the
    trace's results and gradients, and its updates in one group), the map from the view's
    nodes to the trace's, and the trace's batch inputs."""
    batch, batch_inputs = batch_of(trace)
    graph, view, original = planning_view(trace, batch_inputs, batch)
    fetches = [view[n] for n in trace.fetches if not _is_assign(n)]
    updates = [view[n] for n in trace.fetches if _is_assign(n)]
    if updates:  # one group, as a training op: the updates' values are not fetched
        with graph.as_default():
            fetches.append(group(*[Tensor._symbolic(n) for n in updates])._node)
    facts = planner.analyse(graph, fetches, {view[n]: batch for n in batch_inputs})
    return facts, fetches, original, batch_inputs


def batch_of(trace: Trace) -> tuple[int | None, list]:
    """The batch size and the batch inputs of a trace: the argument placeholders whose first
    dim is the first argument placeholder's (none without an argument of one dim or more)."""
    first = next((n for n in trace.placeholders if n.shape), None)
    if first is None:
        return None, []
    batch = first.shape[0]
    return batch, [n for n in trace.placeholders if n.shape and n.shape[0] == batch]


def planning_view(trace: Trace, batch_inputs: list,
                  batch: int | None) -> tuple[Graph, dict, dict]:
    """A copy of the nodes the trace fetches in which the batch dim is unknown (what the
    planner prices per row): the first dim of the batch inputs, and each dim of the batch's size
    of a value computed from them (a transposed activation holds the batch in another dim).
    Returns the copy's graph, node -> copy and copy -> node."""
    graph = Graph(f"{trace.graph.name}@plan")
    copies: dict = {}
    batched = set(batch_inputs)
    for n in needed(trace.fetches):
        shape = n.shape
        if n in batched:
            shape = (None, *shape[1:])
        elif n.dtype is not None and batch in shape and any(i in batched for i in n.inputs):
            batched.add(n)
            shape = tuple(None if d == batch else d for d in shape)
        node = graph.add_node(n.op, [copies[i] for i in n.inputs], n.attrs, shape, n.dtype,
                              n.name)
        node.rank = None
        copies[n] = node
    source = trace.graph
    graph.gradient_of = {copies[k]: copies[v] for k, v in source.gradient_of.items()
                         if k in copies and v in copies}
    graph.backward_of = {copies[k]: copies[v] for k, v in source.backward_of.items()
                         if k in copies and v in copies}
    return graph, copies, {c: n for n, c in copies.items()}


def original_layouts(layouts: Layouts, original: dict) -> Layouts:
    """A tensor plan's layouts keyed by the trace's nodes instead of the view's."""
    return Layouts({original[n]: v for n, v in layouts.of.items() if n in original},
                   {original[n]: v for n, v in layouts.inputs.items() if n in original},
                   {original[n]: d for n, d in layouts.shards.items()},
                   [(original[a], original[b]) for a, b in layouts.pairs])


_SOURCES = ("placeholder", "constant", "variable")  # copied, not computed, on a rank


def _is_assign(node) -> bool:
    return node.op.kind == Kind.EFFECT and "ref" in node.attrs


def _state_updates(trace: Trace) -> list:
    """The last assignment of each Variable the trace updates (its new value: `inputs[1]`)."""
    latest: dict = {}
    for n in trace.fetches:
        if _is_assign(n):
            latest[id(n.attrs["ref"])] = n
    return list(latest.values())


def _eager(values: list) -> list:
    return [Tensor._make(v if is_array(v) else np.asarray(v)) for v in values]


def _finish(trace: Trace, values: list):
    """Write the step's gradients to the eager `.grad` and rebuild the function's results from
    `values` (aligned with `trace.fetches`)."""
    trace.write_grads(values)
    return trace.rebuild(_eager(values[:trace.n_out]))


def _feeds(trace: Trace, arrays: list, here: dict) -> dict:
    """Feeds of a rewritten copy of `trace`: its argument placeholders the call's arrays, its
    gradient placeholders the eager `.grad` (`here`: placeholder of the trace -> of the copy)."""
    feed = {}
    for i, node in enumerate(trace.placeholders):
        if node in here:
            feed[here[node]] = arrays[i]
    for p, node in trace.grad_inputs:
        if node in here:
            feed[here[node]] = p._grad._data
    return feed


class DataRun:
    """A data plan: this rank's trace of the function on its share of the batch rows, with the
    gradients averaged over the ranks and the results joined. A Variable set from the rows
    other than through the gradients (BatchNorm's running statistics) is set to the ranks'
    average, so that every rank's eager model holds the same values."""

    synced = ()  # every rank updates its eager state alike: nothing to send

    def __init__(self, inner, whole: Trace, args: tuple, kwargs: dict, batch_inputs: list,
                 world, where: str) -> None:
        self.world = world
        self.batch_index = {i for i, n in enumerate(whole.placeholders) if n in batch_inputs}
        local_args, local_kwargs = self._rows(args, kwargs)
        trace = self.trace = Trace(inner._traced_fn(), local_args, local_kwargs, inner.name,
                                   inner.optimize, strict=inner.strict)
        if len(trace.placeholders) != len(whole.placeholders) or len(trace.fetches) != len(
                whole.fetches):
            raise DistributedError(f"{where}: the function traced on {world.size} ranks' "
                                   "share of the batch builds a different graph than on the "
                                   "whole batch (does it branch on the batch size?)")
        grads = dict(trace.graph.gradient_of)
        rows = {trace.placeholders[i] for i in sorted(self.batch_index)}
        from_rows, statistics = set(rows), set(rows)  # statistics: not through a gradient
        for n in needed(trace.fetches):
            if n not in from_rows and any(i in from_rows for i in n.inputs):
                from_rows.add(n)
            if n not in statistics and any(i in statistics and i not in grads
                                           for i in n.inputs):
                statistics.add(n)
        self.averaged = frozenset(a.inputs[1] for a in _state_updates(trace)
                                  if a.inputs[1] in statistics and a.inputs[1] not in grads
                                  and np.dtype(a.inputs[1].dtype).kind == "f")
        copy = self.copy = data_parallel_graph.rewrite(trace.graph, trace.fetches, grads, [],
                                                       self.averaged)
        for k in range(trace.n_out):
            copy.fetches[k] = self._join(copy, trace.fetches[k], whole.fetches[k], from_rows,
                                         where, k)
        self.session = Session(copy.graph, optimize=inner.optimize, device=trace.where)
        self.values = [n for n in copy.fetches if n is not None]

    def _rows(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """The call's arguments with each batch input cut to this rank's rows."""
        count = iter(range(1 << 62))

        def cut(path, value):
            if next(count) not in self.batch_index:
                return value
            if isinstance(value, Tensor):
                return Tensor._make(data_parallel_graph.rows(value._data, self.world.rank,
                                                             self.world.size))
            return data_parallel_graph.rows(value, self.world.rank, self.world.size)

        return map_tensors(args, kwargs, cut)

    def _join(self, copy, local, whole, from_rows: set, where: str, k: int):
        """Result `k` on this rank's rows joined over the ranks: gathered along the rows,
        averaged (an integer summed), or as it is when the rows do not reach it."""
        node = copy.fetches[k]
        if local not in from_rows or local.dtype is None:
            return node
        g = copy.graph
        if tuple(local.shape) == tuple(whole.shape):
            kind = "mean" if np.dtype(local.dtype).kind in "fc" else "sum"
            made = g.add_node(_all_reduce, (node,), {"reduce": kind}, local.shape, local.dtype,
                              f"{local.name}_{kind}")
        elif (local.shape and tuple(local.shape[1:]) == tuple(whole.shape[1:])
              and local.shape[0] * self.world.size == whole.shape[0]):
            made = g.add_node(_gather, (node,), {"dim": 0}, whole.shape, local.dtype,
                              f"{local.name}_rows")
        else:
            raise DistributedError(f"{where}: result {k} has shape {tuple(local.shape)} on a "
                                   f"rank's rows and {tuple(whole.shape)} on the whole batch; "
                                   "it is neither per row nor a per-batch value to average")
        made.rank = None
        return made

    def __call__(self, arrays: list, args: tuple, kwargs: dict):
        rank, size = self.world.rank, self.world.size
        local = [data_parallel_graph.rows(a, rank, size) if i in self.batch_index else a
                 for i, a in enumerate(arrays)]
        got = iter(self.session.run(self.values, _feeds(self.trace, local,
                                                        self.copy.placeholders)))
        return _finish(self.trace, [None if n is None else next(got) for n in self.copy.fetches])


class PipelineRun:
    """A pipeline plan: this rank's partition of the trace. Every rank gets every result
    through the partition's sends; the gradients and the updated Variables' new values, which
    every rank's eager model needs, are computed where their stage runs and then shared in one
    all-gather per dtype (`share_owned`), so the ranks that do not hold a Variable write its
    new value into their eager copy."""

    def __init__(self, trace: Trace, placement: dict, optimize: int, world) -> None:
        self.trace, self.world = trace, world
        n_out, n_grads = trace.n_out, len(trace.grads_fetched)
        outputs, effects = trace.fetches[:n_out], trace.fetches[n_out + n_grads:]
        self.grads = trace.fetches[n_out:n_out + n_grads]
        self.updates = _state_updates(trace)
        computed = set(needed(outputs + effects))
        wanted = list(dict.fromkeys(self.grads + [a.inputs[1] for a in self.updates]))
        self.sent = [n for n in wanted if n not in computed or n.op.name in _SOURCES]
        self.part = partition(trace.graph, outputs + effects + self.sent, world.rank,
                              world.size, placement)
        self.shared = [n for n in wanted if n not in self.sent]
        self.owner = {n: self.part.ranks[n] for n in self.shared}
        self.mine = [n for n in self.shared if self.owner[n] == world.rank]
        self.session = Session(self.part.graph, optimize=optimize, device=trace.where)
        self.values = [n for n in self.part.fetches if n is not None]
        here = [self.part.graph.get_node(n.name) for n in self.mine]  # copied under its name
        for n, copy in zip(self.mine, here):
            if copy.op is not n.op or tuple(copy.shape) != tuple(n.shape):
                raise DistributedError(f"dj.jit(distribute='auto'): plan pipeline: node "
                                       f"{n.name!r} is not in rank {world.rank}'s partition")
        self.targets = self.values + here + self.part.sends
        ranks = self.part.ranks
        self.synced = [a for a in self.updates if ranks[a] != COPIED]
        self.state = [a for a in self.synced if ranks[a] != world.rank]  # held elsewhere

    def __call__(self, arrays: list, args: tuple, kwargs: dict):
        try:
            out = self.session.run(self.targets,
                                   _feeds(self.trace, arrays, self.part.placeholders))
        finally:
            graph_ops.finish_sends()
        got = iter(out[:len(self.values)])
        fetched = [None if n is None else next(got) for n in self.part.fetches]
        n_out, n_effects = self.trace.n_out, len(self.trace.fetches) - self.trace.n_out - len(
            self.grads)
        value = dict(zip(self.sent, fetched[n_out + n_effects:]))
        value.update(share_owned(self.shared, self.owner,
                                 dict(zip(self.mine, out[len(self.values):])), self.world))
        commit_assignments([(a.attrs["ref"], value[a.inputs[1]]) for a in self.state])
        values = fetched[:n_out] + [value[g] for g in self.grads] + [None] * n_effects
        return _finish(self.trace, values)


def share_owned(nodes: list, owner: dict, mine: dict, world) -> dict:
    """{node: value} for every node of `nodes`, each computed on its `owner` rank (`mine`:
    this rank's), by one all-gather per dtype of the values laid end to end."""
    shared: dict = {}
    for dtype in dict.fromkeys(np.dtype(n.dtype) for n in nodes):
        group = [n for n in nodes if np.dtype(n.dtype) == dtype]
        sizes = {n: int(np.prod(n.shape, dtype=np.int64)) for n in group}
        counts = [sum(sizes[n] for n in group if owner[n] == r) for r in range(world.size)]
        local = [np.asarray(mine[n], dtype).reshape(-1) for n in group if owner[n] == world.rank]
        send = np.concatenate(local) if local else np.empty(0, dtype)
        if world.size > 1:
            every = np.empty(sum(counts), dtype)
            offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
            wait(world.comm.Iallgatherv(send, [every, (counts, offsets)]),
                 "dj.jit(distribute='auto'): sharing the pipeline's updated state")
        else:
            every = send
        start = dict(zip(range(world.size), np.concatenate([[0], np.cumsum(counts)])))
        for n in group:
            r = owner[n]
            shared[n] = every[start[r]:start[r] + sizes[n]].reshape(n.shape)
            start[r] += sizes[n]
    return shared


class TensorRun:
    """A tensor plan: this rank's tensor-parallel copy of the trace. The shards are cut from
    the eager Variables before each call; the updated split Variables are gathered after it
    and written into them."""

    def __init__(self, trace: Trace, layouts: Layouts, optimize: int, world) -> None:
        self.trace, self.world = trace, world
        self.shards = tensor_parallel_graph.Shards()
        updates = _state_updates(trace)
        fetches = list(trace.fetches) + [a.inputs[1] for a in updates]
        self.copy = tensor_parallel_graph.rewrite(trace.graph, fetches, layouts, self.shards)
        self.state = self.synced = [a for a in updates if a.inputs[0] in layouts.shards]
        self.updates = updates
        self.session = Session(self.copy.graph, optimize=optimize, device=trace.where)
        self.values = [n for n in self.copy.fetches if n is not None]

    def __call__(self, arrays: list, args: tuple, kwargs: dict):
        rank, size = self.world.rank, self.world.size
        for whole, dim, shard in self.shards.by_id.values():  # the eager values are the truth
            shard._data[...] = np.split(np.asarray(whole._data), size, axis=dim)[rank]
        got = iter(self.session.run(self.values, _feeds(self.trace, arrays,
                                                        self.copy.placeholders)))
        values = [None if n is None else next(got) for n in self.copy.fetches]
        n = len(self.trace.fetches)
        new = dict(zip(map(id, self.updates), values[n:]))
        commit_assignments([(a.attrs["ref"], new[id(a)]) for a in self.state])
        return _finish(self.trace, values[:n])


def _price_state_sync(plan: Plan, runner, model: CostModel, world: int) -> None:
    """Add to a pipeline or tensor plan what keeping every rank's eager state current costs:
    the updated Variables all-gathered from the ranks that hold them, or a split one from its
    shards."""
    rows = plan.batch or 1
    values = [a.inputs[1] for a in runner.synced]
    if isinstance(runner, PipelineRun):
        seconds = model.all_reduce_seconds(sum(value_bytes(v, rows) for v in values), world) / 2
        what = "all-gathered from the ranks holding them"
    else:
        seconds = sum(model.all_reduce_seconds(value_bytes(v, rows), world) / 2
                      for v in values)
        what = "gathered from its shards"
    plan.communication_s += seconds
    plan.predicted_s += seconds
    plan.schedule += (f"; then the {len(values)} updated Variable(s) {what}, so that every "
                      "rank's eager model is current")
