"""Pipeline checks that hold at any world size: pytest runs them in one process (every stage
local); `tests/test_distributed_pipeline.py` runs this file under `mpiexec -n 2` and `-n 4`,
where each rank holds one stage. Each compares with one process stepping the unsplit model."""

from __future__ import annotations

import json
import os
import sys
import tempfile

import numpy as np

import dongjing as dj
import dongjing.distributed as dist
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing.distributed.pipeline import Pipe
from dongjing.distributed.schedules import schedule_order

BATCH = 10  # with 4 chunks: micro-batches of 3, 3, 2, 2 rows
BALANCES = {1: [3, 4], 2: [4, 3], 4: [2, 2, 2, 1]}


def _model():
    dj.manual_seed(3)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(),
                         nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 4))


def _data(step: int):
    rng = np.random.default_rng(10 + step)
    return (rng.standard_normal((BATCH, 6)).astype(np.float32),
            rng.integers(0, 4, BATCH))


def _reference(steps: int, loss_fn):
    """One process, the unsplit model: the losses and the final parameters and gradients."""
    model = _model()
    opt = dj.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for s in range(steps):
        x, y = _data(s)
        opt.zero_grad()
        loss = loss_fn(model(dj.tensor(x)), dj.tensor(y))
        loss.backward()
        losses.append(loss.item())
        if s < steps - 1:
            opt.step()
    return losses, dict(model.named_parameters())


def _sum_loss(out, y):
    return F.cross_entropy(out, y, reduction="sum")


def check_pipe_matches_unsplit_training():
    """Three steps of SGD with momentum through the pipe, each schedule, with unequal
    micro-batches: every rank's loss and its stage's gradients and parameters equal the
    unsplit model's."""
    steps = 3
    for loss_fn, reduction in ((F.cross_entropy, "mean"), (_sum_loss, "sum")):
        want_losses, want = _reference(steps, loss_fn)
        for schedule in ("gpipe", "1f1b"):
            model = _model()
            pipe = Pipe(model, balance=BALANCES[dist.get_world_size()], chunks=4,
                        schedule=schedule)
            opt = dj.optim.SGD(pipe.parameters(), lr=0.1, momentum=0.9)
            for s in range(steps):
                x, y = _data(s)
                opt.zero_grad()
                loss = pipe.step(dj.tensor(x), dj.tensor(y), loss_fn, reduction=reduction)
                np.testing.assert_allclose(loss.item(), want_losses[s], rtol=1e-5,
                                           err_msg=f"{schedule} loss, step {s}")
                if s < steps - 1:
                    opt.step()
            names = [n for n, _ in pipe.named_parameters()]
            assert names, "every stage of these balances holds parameters"
            for name, p in pipe.named_parameters():
                np.testing.assert_allclose(p.grad.numpy(), want[name].grad.numpy(), rtol=1e-4,
                                           atol=1e-6, err_msg=f"{schedule} {name}.grad")
                np.testing.assert_allclose(p.numpy(), want[name].numpy(), rtol=1e-5, atol=1e-6,
                                           err_msg=f"{schedule} {name}")


def check_pipe_one_chunk_and_float64():
    """chunks=1 (no micro-batching) in float64: equal to the unsplit step to 1e-12."""
    model = _model().to(dj.float64)
    pipe = Pipe(model, balance=BALANCES[dist.get_world_size()], chunks=1, schedule="1f1b")
    x, y = _data(0)
    loss = pipe.step(dj.tensor(x.astype(np.float64)), dj.tensor(y), F.cross_entropy)
    assert loss.dtype == dj.float64
    ref = _model().to(dj.float64)
    want = F.cross_entropy(ref(dj.tensor(x.astype(np.float64))), dj.tensor(y))
    want.backward()
    np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-12)
    grads = {n: p.grad.numpy() for n, p in ref.named_parameters()}
    for name, p in pipe.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), grads[name], rtol=1e-10, atol=1e-12)


def check_pipeline_timeline_of_every_rank():
    """One Chrome trace of a profiled step: a process per rank, each with the F and B range of
    every micro-batch, in its schedule's order."""
    world, chunks = dist.get_world_size(), 3
    pipe = Pipe(_model(), balance=BALANCES[world], chunks=chunks, schedule="1f1b")
    x, y = _data(0)
    with dj.profiler.profile() as prof:
        pipe.step(dj.tensor(x), dj.tensor(y), F.cross_entropy)
    path = os.path.join(tempfile.gettempdir(), f"dj_pipe_trace_{os.getppid()}.json")
    if world == 1:
        path = os.path.join(tempfile.mkdtemp(), "trace.json")
    dj.profiler.export_ranks_trace(prof, path)
    if dist.get_rank() == 0:
        with open(path) as f:
            events = json.load(f)["traceEvents"]
        os.remove(path)
        names = {e["args"]["name"] for e in events if e["name"] == "process_name"}
        assert names == {f"rank {r}" for r in range(world)}, names
        stages = len(BALANCES[world]) if world > 1 else 1
        for rank in range(world):
            ranges = sorted((e for e in events if e.get("cat") == "pipeline"
                             and e["pid"] == rank), key=lambda e: e["ts"])
            want = schedule_order("1f1b", rank, stages, chunks)
            assert [e["name"] for e in ranges] == [f"{k}{m}" for k, m in want], ranges
            assert all(e["ts"] >= 0 for e in ranges)


CHECKS = [check_pipe_matches_unsplit_training, check_pipe_one_chunk_and_float64,
          check_pipeline_timeline_of_every_rank]


if __name__ == "__main__":
    dist.init(timeout=120)
    for check in CHECKS:
        check()
        print(f"rank {dist.get_rank()}/{dist.get_world_size()}: {check.__name__} ok", flush=True)
    sys.exit(0)
