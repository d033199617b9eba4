"""`python -m bench.distributed plans` (under `mpiexec -n K`): for each model, the plan
`dj.Session(g, distribute="auto")` chose on this machine, its predicted step time, the measured
one, and a plain Session's in the same processes. The models: MLPs (data parallel where they
fit; a pipeline, in micro-batches or not, or a tensor split where `max_memory` rules the rest
out) and W5, the recurrent net of the performance table (no batch input: replicated, or a
pipeline over its unrolled time steps where only that fits)."""

from __future__ import annotations

import time

# (name, layer sizes, batch rows, max_memory as a share of one process's need, Session extras)
PLAN_MODELS = [
    ("mlp 32-64-64-4", (32, 64, 64, 4), 128, None, {}),
    ("mlp 256-512-512-10", (256, 512, 512, 10), 512, None, {}),
    ("mlp 16-96-96-96-96-4, max_memory 3/4", (16, 96, 96, 96, 96, 4), 32, 0.75, {}),
    ("mlp 64-1024-1024-1024-10, max_memory 3/4", (64, 1024, 1024, 1024, 10), 64, 0.75, {}),
    ("mlp 32-256-4, max_memory 3/4", (32, 256, 4), 32, 0.75, {}),
    ("mlp 16-95-95-95-95-4, max_memory 3/4", (16, 95, 95, 95, 95, 4), 32, 0.75, {}),
    ("mlp 16-95-95-95-95-4, max_memory 3/4, 4 micro-batches", (16, 95, 95, 95, 95, 4), 32, 0.75,
     {"pipeline_chunks": 4}),
    ("mlp 64-255-255-255-255-10, max_memory 1/2", (64, 255, 255, 255, 255, 10), 512, 0.5, {}),
    ("mlp 64-255-255-255-255-10, max_memory 1/2, 16 micro-batches", (64, 255, 255, 255, 255, 10),
     512, 0.5, {"pipeline_chunks": 16}),
]


def _median(values):
    values = sorted(values)
    return values[len(values) // 2]


def _plan_model(sizes):
    import dongjing as dj

    dj.manual_seed(7)
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers += [dj.nn.Linear(a, b)] + ([dj.nn.Tanh()] if i < len(sizes) - 2 else [])
    return dj.nn.Sequential(*layers)


def _mlp_step(sizes, rows):
    """An SGD step of an MLP of `sizes`: (train op, feed) for `rows` rows."""
    import numpy as np

    import dongjing as dj

    model = _plan_model(sizes)
    opt = dj.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with dj.Graph():
        x = dj.placeholder((None, sizes[0]))
        y = dj.placeholder((None,), dj.int64)
        train = opt.minimize(dj.nn.functional.cross_entropy(model(x), y))
    rng = np.random.default_rng(0)
    feed = {x: rng.standard_normal((rows, sizes[0])).astype(np.float32),
            y: rng.integers(0, sizes[-1], rows)}
    return train, feed


def _w5_step():
    """W5 at the performance table's size (50 steps of batch 32, 32 -> 64), unrolled: the
    loss and the three gradients, no update (as the table times it)."""
    import dongjing as dj
    from bench.workloads import WORKLOADS

    d = WORKLOADS["W5"].data()
    params = [dj.Variable(p.copy(), name=n) for p, n in zip(d.params, d.param_names)]
    with dj.Graph():
        x = dj.placeholder(d.x.shape, name="x")
        h = dj.zeros((d.x.shape[1], d.w_hh.shape[0]))
        for t in range(d.x.shape[0]):
            h = dj.tanh(x[t] @ params[0] + h @ params[1] + params[2])
        loss = h.sum()
        grads = dj.gradients(loss, params)
    return [loss, *grads], {x: d.x}


def _timed(fetches, feed, steps, **session):
    """Median seconds of a step and the plan of its fetches."""
    import dongjing as dj
    import dongjing.distributed as dist

    graph = feed and next(iter(feed))._node.graph
    sess = dj.Session(graph, **session)
    times = []
    for _ in range(steps + 1):
        dist.barrier()
        start = time.perf_counter()
        sess.run(fetches, feed)
        times.append(time.perf_counter() - start)
    return _median(times[1:]), sess.plan


def _single_memory(fetches, feed) -> int:
    """What one process holds for the step (the planner at world size 1, given costs)."""
    from dongjing.distributed import CostModel, planner

    nodes = [f._node for f in (fetches if isinstance(fetches, list) else [fetches])]
    facts = planner.analyse(nodes[0].graph, nodes,
                            {k._node: v.shape[0] for k, v in feed.items()})
    return planner.choose(facts, CostModel(), 1, nodes).memory_per_rank[0]


def _smallest_pipeline(fetches, feed) -> int | None:
    """The peak memory per rank of the leanest pipeline the planner weighs here."""
    import dongjing.distributed as dist
    from dongjing.distributed import CostModel, planner

    nodes = [f._node for f in fetches]
    facts = planner.analyse(nodes[0].graph, nodes, {})
    plan = planner.choose(facts, CostModel(), dist.get_world_size(), nodes)
    peaks = [c.peak_memory for c in plan.candidates if c.strategy == "pipeline" and c.memory]
    return min(peaks) if peaks else None


def _row(name, batch, plain, measured, plan, limit):
    import dongjing.distributed as dist

    return {"model": name, "batch": batch, "ranks": dist.get_world_size(),
            "plan": plan.strategy, "chunks": plan.chunks,
            "schedule": plan.pipeline_schedule or "-", "predicted_ms": plan.predicted_s * 1e3,
            "measured_ms": measured * 1e3, "plain_session_ms": plain * 1e3,
            "max_memory": limit, "peak_memory": max(plan.memory_per_rank),
            "costs": plan.cost_source}


def plans(steps: int = 20) -> list[dict]:
    """For each model of PLAN_MODELS and W5: the plan distribute="auto" chose here (measured
    costs), its predicted step time, the measured one, and a plain Session's."""
    import dongjing.distributed as dist

    dist.init()
    rows = []
    for name, sizes, batch, share, extra in PLAN_MODELS:
        train, feed = _mlp_step(sizes, batch)
        plain, _ = _timed(train, feed, steps)
        limit = None if share is None else int(share * _single_memory(train, feed))
        train, feed = _mlp_step(sizes, batch)  # the same initial parameters
        measured, plan = _timed(train, feed, steps, distribute="auto", max_memory=limit, **extra)
        rows.append(_row(name, batch, plain, measured, plan, limit))
    fetches, feed = _w5_step()
    plain, _ = _timed(fetches, feed, steps)
    measured, plan = _timed(fetches, feed, steps, distribute="auto")
    rows.append(_row("W5 rnn-loop (50 x 32 x 32 -> 64, unrolled)", 32, plain, measured, plan,
                     None))
    limit = _smallest_pipeline(fetches, feed) if dist.get_world_size() > 1 else None
    if limit is not None:
        measured, plan = _timed(fetches, feed, steps, distribute="auto", max_memory=limit)
        rows.append(_row("W5 rnn-loop, max_memory: only a pipeline fits", 32, plain, measured,
                         plan, limit))
    return rows
