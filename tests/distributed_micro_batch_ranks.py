"""Static graphs in micro-batches (`dj.Session(g, pipeline_chunks=M, pipeline_schedule=...)`):
checks that hold at any world size. `tests/test_distributed_micro_batches.py` runs them in one
process (every stage here) and under `mpiexec -n 2` and `-n 4` (one stage per rank). Each
compares with the same model run unsplit by a plain Session in this process."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile

import numpy as np

import dongjing as dj
import dongjing.distributed as dist
import dongjing.nn.functional as F
from dongjing.distributed.schedules import schedule_order

STEPS = 3
SIZES = (5, 6, 6, 6, 3)  # four layers: one stage each on 4 ranks, two each on 2


def _on(rank: int, placed: bool):
    return dj.device(f"rank:{rank}") if placed else contextlib.nullcontext()


def _train(placed: bool, dtype=dj.float32, adam=False, rows=7, **session):
    """STEPS steps of a 4-layer MLP (layer i on rank i * world // 4 when `placed`): per step
    the fetched loss, gradients, logits (rows) and correct count; the final parameters."""
    dj.manual_seed(4)
    layers = [dj.nn.Linear(a, b) for a, b in zip(SIZES, SIZES[1:])]
    params = [p for layer in layers for p in layer.parameters()]
    if dtype == dj.float64:
        for p in params:
            p.data = dj.tensor(p.numpy().astype(np.float64))
    opt = (dj.optim.Adam(params, lr=0.01) if adam else
           dj.optim.SGD(params, lr=0.1, momentum=0.9))
    world = dist.get_world_size()
    with dj.Graph() as g:
        x = dj.placeholder((None, SIZES[0]), dtype)
        y = dj.placeholder((None,), dj.int64)
        h = x
        for i, layer in enumerate(layers):
            with _on(i * world // len(layers), placed):
                h = layer(h).tanh() if i < len(layers) - 1 else layer(h)
        with _on(world - 1, placed):
            loss = F.cross_entropy(h, y)
            correct = dj.sum(dj.cast(h.argmax(1) == y, dj.int64))
        grads = dj.gradients(loss, [layers[0].weight, layers[-1].bias])
        train = opt.minimize(loss)
    sess = dj.Session(g, **session)
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((rows, SIZES[0])).astype(np.dtype(dtype))
    yv = rng.integers(0, SIZES[-1], rows)
    out = [sess.run({"loss": loss, "grads": grads, "train": train, "logits": h,
                     "correct": correct}, {x: xv, y: yv}) for _ in range(STEPS)]
    return out, sess.run(params)  # every rank gets every parameter's value


def _same(got, want, rtol, atol):
    for a, b in zip(got[0], want[0]):
        assert a["train"] is None
        np.testing.assert_allclose(a["loss"], b["loss"], rtol=rtol, atol=atol, err_msg="loss")
        for u, v in zip(a["grads"], b["grads"]):
            np.testing.assert_allclose(u, v, rtol=rtol, atol=atol, err_msg="gradient")
        np.testing.assert_allclose(a["logits"], b["logits"], rtol=rtol, atol=atol)
        assert int(a["correct"]) == int(b["correct"]), (a["correct"], b["correct"])
    for u, v in zip(got[1], want[1]):
        np.testing.assert_allclose(u, v, rtol=rtol, atol=atol, err_msg="parameter")


def check_gpipe_and_1f1b_equal_the_unsplit_step():
    want = _train(placed=False)
    for schedule in ("gpipe", "1f1b"):
        for chunks in (2, 3, 7):  # 7 rows: micro-batches of 3, 2, 2 rows for 3 chunks
            got = _train(True, pipeline_chunks=chunks, pipeline_schedule=schedule)
            _same(got, want, rtol=1e-5, atol=1e-7)
    adam = _train(placed=False, adam=True)
    _same(_train(True, adam=True, pipeline_chunks=3, pipeline_schedule="1f1b"), adam, 1e-5, 1e-7)


def check_float64_one_chunk_is_exact_and_more_chunks_are_close():
    want = _train(placed=False, dtype=dj.float64)
    got = _train(True, dtype=dj.float64, pipeline_chunks=1)
    for a, b in zip(got[0], want[0]):  # the same operations in the same order
        assert a["loss"] == b["loss"] and np.array_equal(a["logits"], b["logits"])
        assert all(np.array_equal(u, v) for u, v in zip(a["grads"], b["grads"]))
    assert all(np.array_equal(u, v) for u, v in zip(got[1], want[1]))
    for schedule in ("gpipe", "1f1b"):  # only the sum over the micro-batches moves the bits
        _same(_train(True, dtype=dj.float64, pipeline_chunks=4, pipeline_schedule=schedule),
              want, rtol=1e-12, atol=1e-14)


def check_unplaced_graphs_accumulate_gradients():
    """Unplaced (every rank runs the whole graph): micro-batches are gradient accumulation."""
    want = _train(placed=False)
    _same(_train(False, pipeline_chunks=3), want, rtol=1e-5, atol=1e-7)


def check_clear_errors():
    try:
        _train(True, rows=2, pipeline_chunks=3)
    except dist.DistributedError as exc:
        assert "a batch of 2 rows cannot make 3 micro-batches" in str(exc), exc
    else:
        raise AssertionError("2 rows made 3 micro-batches")
    v = dj.Variable(np.zeros((), np.float32), name="running_mean")
    with dj.Graph() as g:
        x = dj.placeholder((None, 3))
        step = dj.assign(v, dj.mean(x))
    try:
        dj.Session(g, pipeline_chunks=2).run(step, {x: np.ones((4, 3), np.float32)})
    except dist.DistributedError as exc:
        assert "assignment" in str(exc) and "running_mean" in str(exc), exc
    else:
        raise AssertionError("an assignment of the batch's mean ran in micro-batches")
    with dj.Graph() as g:  # fetches that read no batch input run as without micro-batches
        w = dj.Variable(np.ones(2, np.float32), name="w")
        double = w * 2
    np.testing.assert_array_equal(dj.Session(g, pipeline_chunks=4).run(double), [2, 2])


def check_1f1b_needs_stages_in_rank_order():
    world = dist.get_world_size()
    if world == 1:
        return  # one stage: any order
    layer = dj.nn.Linear(3, 2)
    with dj.Graph() as g:
        x = dj.placeholder((None, 3))
        with dj.device(f"rank:{world - 1}"):
            h = layer(x).tanh()
        with dj.device("rank:0"):
            loss = dj.mean(h * h)
        train = dj.optim.SGD(layer.parameters(), lr=0.1).minimize(loss)
    try:
        dj.Session(g, pipeline_chunks=2, pipeline_schedule="1f1b").run(
            train, {x: np.ones((4, 3), np.float32)})
    except dist.DistributedError as exc:
        assert f"from rank {world - 1} to rank 0 in the forward pass" in str(exc), exc
        assert "gpipe" in str(exc), exc
    else:
        raise AssertionError("1F1B ran stages out of rank order")


def check_timeline_of_every_rank():
    """One Chrome trace of a profiled step: each rank's F and B ranges in its schedule's order."""
    world, chunks = dist.get_world_size(), 3
    _train(True, pipeline_chunks=chunks, pipeline_schedule="1f1b")  # compiled before profiling
    with dj.profiler.profile() as prof:
        _train(True, pipeline_chunks=chunks, pipeline_schedule="1f1b")
    path = os.path.join(tempfile.gettempdir(), f"dj_static_pipe_trace_{os.getppid()}.json")
    if world == 1:
        path = os.path.join(tempfile.mkdtemp(), "trace.json")
    dj.profiler.export_ranks_trace(prof, path)
    if dist.get_rank() == 0:
        with open(path) as f:
            events = json.load(f)["traceEvents"]
        os.remove(path)
        for rank in range(world):
            ranges = sorted((e for e in events if e.get("cat") == "pipeline"
                             and e["pid"] == rank), key=lambda e: e["ts"])
            want = schedule_order("1f1b", rank, world, chunks) * STEPS
            assert [e["name"] for e in ranges] == [f"{k}{m}" for k, m in want], ranges


CHECKS = [check_gpipe_and_1f1b_equal_the_unsplit_step,
          check_float64_one_chunk_is_exact_and_more_chunks_are_close,
          check_unplaced_graphs_accumulate_gradients, check_clear_errors,
          check_1f1b_needs_stages_in_rank_order, check_timeline_of_every_rank]

if __name__ == "__main__":
    dist.init(timeout=120)
    for check in CHECKS:
        check()
        print(f"rank {dist.get_rank()}/{dist.get_world_size()}: {check.__name__} ok", flush=True)
    sys.exit(0)
