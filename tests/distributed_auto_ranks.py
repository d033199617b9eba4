"""`dj.Session(g, distribute="auto")` checks that hold at any world size:
`tests/test_distributed_auto.py` runs them in one process (the plan is "single") and under
`mpiexec -n 2` and `-n 4`: MLPs and the W5 recurrent net. Each compares with the same model
run by a plain Session in this process, and prints the plan's predicted step time beside the
measured one."""

from __future__ import annotations

import sys
import time

import numpy as np

import dongjing as dj
import dongjing.distributed as dist
import dongjing.nn.functional as F
from dongjing.distributed import planner

STEPS = 3
# Fixed figures, so that every run plans the same (the default measures this machine).
COSTS = dist.CostModel(flops_per_s=1e10, bytes_per_s=5e9, node_overhead_s=5e-6,
                       link_latency_s=3e-5, link_bytes_per_s=2e9, source="given (tests)")


def _mlp(sizes):
    dj.manual_seed(7)
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(dj.nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(dj.nn.Tanh())
    return dj.nn.Sequential(*layers)


def _data(rows, features, classes=4):
    rng = np.random.default_rng(2)
    return (rng.standard_normal((rows, features)).astype(np.float32),
            rng.integers(0, classes, rows))


def _train(sizes, rows, adam=False, **session):
    """STEPS SGD-with-momentum steps: losses, fetched logits and predictions, the final
    parameters, the training step's plan (None without distribute) and the measured seconds of
    the fastest step after the first, and the first layer's weight gradient at each step."""
    model = _mlp(sizes)
    opt = (dj.optim.Adam(model.parameters(), lr=0.01) if adam else
           dj.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    with dj.Graph() as g:
        x = dj.placeholder((None, sizes[0]))
        y = dj.placeholder((None,), dj.int64)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        correct = dj.sum(dj.cast(logits.argmax(1) == y, dj.int64))
        (grad,) = dj.gradients(loss, [model[0].weight])  # fetched: the whole batch's gradient
        train = opt.minimize(loss)
    sess = dj.Session(g, **session)
    xv, yv = _data(rows, sizes[0])
    losses, seconds, grads = [], [], []
    for _ in range(STEPS):
        dist.barrier()
        start = time.perf_counter()
        out = sess.run({"loss": loss, "grad": grad, "train": train}, {x: xv, y: yv})
        seconds.append(time.perf_counter() - start)
        losses.append(out["loss"])
        grads.append(out["grad"])
    plan = sess.plan  # the training step's (the fetches below are planned on their own)
    fetched = sess.run([logits, correct], {x: xv, y: yv})
    return (losses, fetched, [p.numpy().copy() for p in model.parameters()], plan,
            min(seconds[1:]), grads)


def _same(got, want):
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, err_msg="losses")
    for a, b in zip(got[5], want[5]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6, err_msg="fetched gradient")
    np.testing.assert_allclose(got[1][0], want[1][0], rtol=1e-4, atol=1e-5, err_msg="logits")
    assert int(got[1][1]) == int(want[1][1]), (got[1][1], want[1][1])


def _report(name, plan, seconds):
    print(f"rank {dist.get_rank()}/{dist.get_world_size()}: {name}: plan {plan.strategy}, "
          f"predicted {plan.predicted_s * 1e3:.3f} ms, measured {seconds * 1e3:.3f} ms per step",
          flush=True)


def check_an_mlp_that_fits_runs_data_parallel():
    sizes, rows = (32, 64, 64, 4), 128
    want = _train(sizes, rows)
    got = _train(sizes, rows, distribute="auto", cost_model=COSTS)
    _same(got, want)
    for p, w in zip(got[2], want[2]):  # every rank holds every parameter, all equal
        np.testing.assert_allclose(p, w, rtol=1e-4, atol=1e-6)
    plan = got[3]
    assert plan.strategy == ("data" if dist.get_world_size() > 1 else "single"), str(plan)
    assert f"plan: {plan.strategy} over {dist.get_world_size()} rank(s)" in str(plan)
    _report("mlp 32-64-64-4, batch 128", got[3], got[4])


def _whole_memory(sizes, rows) -> int:
    """What one process would hold for the big model's step (the planner at world size 1)."""
    model = _mlp(sizes)
    opt = dj.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with dj.Graph():
        x = dj.placeholder((None, sizes[0]))
        y = dj.placeholder((None,), dj.int64)
        loss = F.cross_entropy(model(x), y)
        train = opt.minimize(loss)
    fetches = [loss._node, train._node]
    facts = planner.analyse(loss._node.graph, fetches, {x._node: rows, y._node: rows})
    return planner.choose(facts, COSTS, 1, fetches).memory_per_rank[0]


def check_a_model_too_big_for_one_rank_is_split():
    # hidden sizes that split evenly over no world size: no tensor split, so a pipeline
    sizes, rows = (16, 95, 95, 95, 95, 4), 32
    limit = int(0.75 * _whole_memory(sizes, rows))
    if dist.get_world_size() == 1:
        try:
            _train(sizes, rows, distribute="auto", cost_model=COSTS, max_memory=limit)
        except dist.DistributedError as exc:
            assert "no plan over 1 rank(s) fits max_memory" in str(exc), exc
            assert "single, needs" in str(exc), exc
        else:
            raise AssertionError("a plan over max_memory ran")
        return
    want = _train(sizes, rows)
    got = _train(sizes, rows, distribute="auto", cost_model=COSTS, max_memory=limit)
    _same(got, want)
    plan = got[3]
    assert plan.strategy == "pipeline", str(plan)
    assert max(plan.memory_per_rank) <= limit, str(plan)
    assert all(plan.rank_nodes), str(plan)  # every rank runs a stage
    notes = {c.strategy: c.note for c in plan.candidates}
    assert "max_memory" in notes["data"] and "max_memory" in notes["replicated"], notes
    assert "no pair of products" in notes["tensor"], notes
    _report(f"mlp {'-'.join(map(str, sizes))}, batch {rows}, max_memory {limit} B", got[3],
            got[4])


def check_a_wide_mlp_too_big_for_one_rank_is_split_by_tensor():
    sizes, rows = (32, 256, 4), 32
    limit = int(0.75 * _whole_memory(sizes, rows))
    if dist.get_world_size() == 1:
        return  # one process: the limit rules every plan out, as the check above shows
    want = _train(sizes, rows)
    got = _train(sizes, rows, distribute="auto", cost_model=COSTS, max_memory=limit)
    _same(got, want)
    plan, world, rank = got[3], dist.get_world_size(), dist.get_rank()
    assert plan.strategy == "tensor", str(plan)
    assert max(plan.memory_per_rank) <= limit, str(plan)
    data = [c for c in plan.candidates if c.strategy == "data"]
    assert data and "needs more than max_memory" in data[0].note, str(plan)  # ruled out
    pipelines = [c for c in plan.candidates if c.strategy == "pipeline" and c.predicted_s]
    assert all(plan.predicted_s < c.predicted_s for c in pipelines), str(plan)
    text = str(plan)
    assert f"plan: tensor over {world} rank(s)" in text and "reduce" in text, text
    # each rank holds its shard of the weights: column split (rows of 0.weight, 0.bias), row
    # split (columns of 2.weight); 2.bias whole, and they equal the plain session's slices
    for name, axis in (("0.weight", 0), ("0.bias", 0), ("2.weight", 1)):
        shard = plan.shards[name].numpy()
        whole = want[2][["0.weight", "0.bias", "2.weight"].index(name)]
        piece = np.split(whole, world, axis=axis)[rank]
        assert shard.shape == piece.shape, (name, shard.shape, piece.shape)
        np.testing.assert_allclose(shard, piece, rtol=1e-4, atol=1e-6, err_msg=name)
    assert "2.bias" not in plan.shards
    if rank == 0:
        print(text, flush=True)
    _report(f"mlp {'-'.join(map(str, sizes))}, batch {rows}, max_memory {limit} B", plan, got[4])
    # Adam: both moments of each split weight split with it (four per pair, two per bias)
    want = _train(sizes, rows, adam=True)
    got = _train(sizes, rows, adam=True, distribute="auto", cost_model=COSTS, max_memory=limit)
    _same(got, want)
    plan = got[3]
    assert plan.strategy == "tensor", str(plan)
    assert len(plan.layouts.shards) == 3 * 3, str(plan)  # 3 Variables, each with 2 moments
    for name, axis in (("0.weight", 0), ("0.bias", 0), ("2.weight", 1)):
        piece = np.split(want[2][["0.weight", "0.bias", "2.weight"].index(name)], world,
                         axis=axis)[rank]
        np.testing.assert_allclose(plan.shards[name].numpy(), piece, rtol=1e-4, atol=1e-6)


def check_the_plan_draws_one_box_per_rank():
    model = _mlp((4, 8, 2))
    with dj.Graph() as g:
        x = dj.placeholder((None, 4))
        out = model(x)
    sess = dj.Session(g, distribute="auto", cost_model=COSTS)
    xv = np.ones((4 * dist.get_world_size(), 4), np.float32)
    np.testing.assert_allclose(sess.run(out, {x: xv}), model(dj.tensor(xv)).numpy(), rtol=1e-5)
    dot = dj.viz.to_dot(sess.plan)
    for r in range(dist.get_world_size()):
        assert f'rank{r} [label="rank {r}: ' in dot, dot


# W5 (docs: /work/shared/workloads.md) at a small size: x (time, batch, in), the tanh recurrence
# unrolled over the time steps (or one dj.while_loop), loss h.sum(), its three gradients
W5 = {"time": 6, "batch": 4, "inputs": 5, "hidden": 8}


def _w5(loop="unrolled", train=False, **session):
    """W5's step, STEPS times: the fetched losses and gradients, the Variables' final values
    (fetched, so every rank has them), and the plan. `train`: SGD updates the Variables."""
    t, b, n, h = W5["time"], W5["batch"], W5["inputs"], W5["hidden"]
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((t, b, n)).astype(np.float32)
    w_xh = dj.Variable(rng.uniform(-1 / 8, 1 / 8, (n, h)).astype(np.float32), name="W_xh")
    w_hh = dj.Variable(rng.uniform(-1 / 8, 1 / 8, (h, h)).astype(np.float32), name="W_hh")
    bias = dj.Variable(rng.uniform(-1 / 8, 1 / 8, (h,)).astype(np.float32), name="b")
    params = [w_xh, w_hh, bias]
    with dj.Graph() as g:
        x = dj.placeholder((t, b, n), name="x")
        state = dj.zeros((b, h))
        if loop == "unrolled":
            for step in range(t):
                state = dj.tanh(x[step] @ w_xh + state @ w_hh + bias)
        else:
            _, state = dj.while_loop(lambda i, s: i < t,
                                     lambda i, s: (i + 1, dj.tanh(x[i] @ w_xh + s @ w_hh + bias)),
                                     [dj.constant(np.int64(0)), state])
        loss = state.sum()
        grads = dj.gradients(loss, params)
        fetches = {"loss": loss, "grads": grads}
        if train:
            fetches["train"] = dj.optim.SGD(params, lr=0.05).minimize(loss)
    sess = dj.Session(g, **session)
    out, seconds = [], []
    for _ in range(STEPS):
        dist.barrier()
        start = time.perf_counter()
        out.append(sess.run(fetches, {x: xv}))
        seconds.append(time.perf_counter() - start)
    plan = sess.plan  # the step's (fetching the Variables below is planned on its own)
    return out, sess.run(params), plan, fetches, x, min(seconds[1:])


def _same_w5(got, want):
    for a, b in zip(got[0], want[0]):
        np.testing.assert_allclose(a["loss"], b["loss"], rtol=1e-5, err_msg="W5 loss")
        for u, v in zip(a["grads"], b["grads"]):
            np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-6, err_msg="W5 gradient")
    for u, v in zip(got[1], want[1]):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6, err_msg="W5 Variable")


def _smallest_pipeline_memory(fetches, x) -> int | None:
    """The peak memory per rank of the leanest pipeline the planner weighs for W5 here."""
    nodes = [t._node for t in [fetches["loss"], *fetches["grads"], fetches.get("train")]
             if t is not None]
    facts = planner.analyse(nodes[0].graph, nodes, {x._node: W5["time"]})
    plan = planner.choose(facts, COSTS, dist.get_world_size(), nodes)
    peaks = [c.peak_memory for c in plan.candidates if c.strategy == "pipeline" and c.memory]
    return min(peaks) if peaks else None


def check_the_w5_recurrent_net_plans_and_equals_one_process():
    world = dist.get_world_size()
    for train in (False, True):
        want = _w5(train=train)
        got = _w5(train=train, distribute="auto", cost_model=COSTS)
        _same_w5(got, want)
        plan = got[2]
        assert plan.strategy in (("single",) if world == 1 else
                                 ("replicated", "pipeline", "tensor")), str(plan)
        assert any("no batch input" in c.note for c in plan.candidates if c.strategy == "data") \
            or world == 1, str(plan)
        _report(f"W5 {W5}, {'SGD step' if train else 'gradients'}", plan, got[5])
        if world == 1:
            continue
        limit = _smallest_pipeline_memory(got[3], got[4])  # forced: only a pipeline fits
        got = _w5(train=train, distribute="auto", cost_model=COSTS, max_memory=limit)
        _same_w5(got, want)
        plan = got[2]
        assert plan.strategy == "pipeline" and max(plan.memory_per_rank) <= limit, str(plan)
        assert plan.chunks == 1 and all(plan.rank_nodes), str(plan)  # no batch rows to split
        _report(f"W5 {W5}, {'SGD step' if train else 'gradients'}, max_memory {limit} B", plan,
                got[5])


def check_the_w5_recurrent_net_on_a_fast_link():
    """With this machine's shared-memory latency (about 2 us) a tensor split of W5's products
    is predicted faster than replicating the step: it must give the same results too."""
    fast = dist.CostModel(flops_per_s=1e10, bytes_per_s=5e9, node_overhead_s=5e-6,
                          link_latency_s=2e-6, link_bytes_per_s=2e9, source="given (tests)")
    for train in (False, True):
        want = _w5(train=train)
        got = _w5(train=train, distribute="auto", cost_model=fast)
        _same_w5(got, want)
        if dist.get_world_size() > 1:
            assert got[2].strategy == "tensor", str(got[2])
        _report(f"W5 {W5}, {'SGD step' if train else 'gradients'}, 2 us link", got[2], got[5])


def check_the_w5_while_loop_plans_around_the_loop():
    """A dj.while_loop runs sub-graphs, which the partitioner does not split: no pipeline; the
    planner says so and picks a plan that runs."""
    want = _w5("while_loop", train=True)
    got = _w5("while_loop", train=True, distribute="auto", cost_model=COSTS)
    _same_w5(got, want)
    plan = got[2]
    if dist.get_world_size() > 1:
        assert plan.strategy in ("replicated", "tensor"), str(plan)
        notes = [c.note for c in plan.candidates if c.strategy == "pipeline"]
        assert notes and "while_loop" in notes[0], str(plan)


def check_a_pipeline_plan_runs_in_micro_batches():
    """The pipeline of the MLP too big for one rank, its micro-batches fixed at 4 (1F1B), then
    the planner's own choice; both equal to one process."""
    sizes, rows = (16, 95, 95, 95, 95, 4), 32
    limit = int(0.75 * _whole_memory(sizes, rows))
    if dist.get_world_size() == 1:
        return  # one process: the limit rules every plan out (checked above)
    want = _train(sizes, rows)
    got = _train(sizes, rows, distribute="auto", cost_model=COSTS, max_memory=limit,
                 pipeline_chunks=4)
    _same(got, want)
    plan = got[3]
    assert plan.strategy == "pipeline" and plan.chunks == 4, str(plan)
    assert plan.pipeline_schedule == "1f1b" and "4 micro-batches" in str(plan), str(plan)
    assert "timeline" in str(plan) and "B3" in str(plan), str(plan)
    _report(f"mlp {'-'.join(map(str, sizes))}, batch {rows}, 4 micro-batches", plan, got[4])
    chosen = _train(sizes, rows, distribute="auto", cost_model=COSTS, max_memory=limit)[3]
    assert chosen.chunk_times and chosen.predicted_s == min(chosen.chunk_times.values()), \
        str(chosen)
    assert chosen.chunks == min(chosen.chunk_times, key=chosen.chunk_times.get), str(chosen)


CHECKS = [check_an_mlp_that_fits_runs_data_parallel, check_a_model_too_big_for_one_rank_is_split,
          check_a_wide_mlp_too_big_for_one_rank_is_split_by_tensor,
          check_the_plan_draws_one_box_per_rank,
          check_the_w5_recurrent_net_plans_and_equals_one_process,
          check_the_w5_recurrent_net_on_a_fast_link, check_the_w5_while_loop_plans_around_the_loop,
          check_a_pipeline_plan_runs_in_micro_batches]

if __name__ == "__main__":
    dist.init(timeout=120)
    for check in CHECKS:
        check()
        print(f"rank {dist.get_rank()}/{dist.get_world_size()}: {check.__name__} ok", flush=True)
    sys.exit(0)
