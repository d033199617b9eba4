"""Static graphs in micro-batches: the checks of `distributed_micro_batch_ranks.py` in one process
and under `mpiexec -n 2` and `-n 4`; the phases a step is cut into; the Session's arguments."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from distributed_micro_batch_ranks import CHECKS
from test_distributed import run_rank_checks

import dongjing as dj
import dongjing.nn.functional as F
from dongjing.distributed import CostModel, DistributedError, planner
from dongjing.distributed.micro_batches import BACKWARD, FORWARD, UPDATE, classify
from dongjing.distributed.partition import needed
from dongjing.distributed.schedules import timeline, timeline_text
from dongjing.errors import ArgumentError, DongjingError

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "distributed_micro_batch_ranks.py"


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_one_process_runs_every_stage(check):
    check()


@pytest.mark.parametrize("ranks", [2, 4])
def test_ranks_run_one_stage_each(ranks):
    run_rank_checks(SCRIPT, ranks, CHECKS)


def _step():
    layer = dj.nn.Linear(3, 2)
    opt = dj.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
    with dj.Graph() as g:
        x = dj.placeholder((None, 3))
        y = dj.placeholder((None,), dj.int64)
        logits = layer(x)
        loss = F.cross_entropy(logits, y)
        train = opt.minimize(loss)
    return g, x, y, logits, loss, train


def test_a_step_is_cut_into_forward_backward_and_update():
    g, x, y, logits, loss, train = _step()
    order = needed([loss._node, train._node])
    phases = classify(g, order, [x._node, y._node])
    assert phases.of[logits._node] == FORWARD and phases.of[loss._node] == FORWARD
    assert all(phases.of[n] == BACKWARD for n in phases.gradients)
    assert len(phases.gradients) == 2  # the weight's and the bias's
    assigns = [n for n in order if n.op.name == "assign"]
    assert assigns and all(phases.of[n] == UPDATE for n in assigns)
    assert phases.of[train._node] == UPDATE
    assert all(phases.of[n] is None for n in order if n.op.name in ("placeholder", "variable"))
    # the batch rows reach the forward and backward values, not the summed gradients' users
    assert logits._node in phases.batched
    assert not any(n in phases.batched for n in assigns)


def test_an_update_that_reads_the_batch_rows_is_refused():
    v = dj.Variable(np.zeros(2, np.float32), name="v")
    layer = dj.nn.Linear(3, 2)
    with dj.Graph() as g:
        x = dj.placeholder((None, 3))
        out = layer(x)
        loss = dj.mean(out * out)
        (grad,) = dj.gradients(loss, [layer.bias])
        step = dj.assign(v, grad + out[0])  # a gradient and one row of the batch
    with pytest.raises(DistributedError, match="reads 'getitem.*not a gradient"):
        classify(g, needed([step._node]), [x._node])


def test_session_arguments_are_checked():
    g, x, y, logits, loss, train = _step()
    for bad in (0, -1, 2.5, True, "2"):
        with pytest.raises(DongjingError, match="pipeline_chunks must be a positive integer"):
            dj.Session(g, pipeline_chunks=bad)
    with pytest.raises(ArgumentError, match="pipeline_schedule"):
        dj.Session(g, pipeline_chunks=2, pipeline_schedule="interleaved")
    sess = dj.Session(g, pipeline_chunks=2)
    with pytest.raises(DongjingError, match="different row counts"):
        sess.run(loss, {x: np.ones((4, 3), np.float32), y: np.zeros(3, np.int64)})


def _mlp_facts(rows=64):
    dj.manual_seed(0)
    sizes = (16, 32, 32, 32, 4)
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers += [dj.nn.Linear(a, b)] + ([dj.nn.Tanh()] if i < len(sizes) - 2 else [])
    model = dj.nn.Sequential(*layers)
    opt = dj.optim.SGD(model.parameters(), lr=0.1)
    with dj.Graph() as g:
        x = dj.placeholder((None, sizes[0]))
        y = dj.placeholder((None,), dj.int64)
        train = opt.minimize(F.cross_entropy(model(x), y))
    fetches = [train._node]
    return planner.analyse(g, fetches, {x._node: rows, y._node: rows}), fetches


@pytest.mark.parametrize("stages,chunks", [(2, 1), (2, 4), (4, 4), (4, 8), (3, 5)])
def test_the_timeline_has_the_bubble_of_the_formula(stages, chunks):
    for schedule in ("gpipe", "1f1b"):
        slots = timeline(schedule, stages, chunks)
        end = max(start for stage in slots for start, _ in stage) + 1
        assert end == 2 * (chunks + stages - 1)  # the bubble: (K-1)/(M+K-1) of the step
        for stage in slots:
            assert sorted(name for _, name in stage) == sorted(
                f"{k}{m}" for k in "FB" for m in range(chunks))
            assert len({start for start, _ in stage}) == 2 * chunks  # one step at a time
    lines = timeline_text("gpipe", stages, chunks)
    assert len(lines) == stages and lines[0].startswith("stage 0: F0")


def test_the_planner_weighs_micro_batches_by_the_bubble_and_the_fixed_costs():
    facts, fetches = _mlp_facts()
    free = CostModel(flops_per_s=1e9, bytes_per_s=1e9, node_overhead_s=0.0,
                     link_latency_s=0.0, link_bytes_per_s=1e12)
    placement = planner._stages(facts, planner._weights(facts, free, "time"), 4)
    plan = planner._pipeline(facts, free, 4, fetches, placement)
    assert sorted(plan.chunk_times) == [1, 2, 4, 8, 16, 32]
    # no fixed cost per node: micro-batches shrink the bubble (only the weights, read once per
    # micro-batch, cost more), so the planner splits the batch
    assert plan.chunks > 1 and plan.pipeline_schedule == "1f1b", plan
    assert plan.predicted_s == min(plan.chunk_times.values()) < plan.chunk_times[1]
    bubble = 3 / (plan.chunks + 3)
    assert f"bubble (K-1)/(M+K-1) = {bubble:.0%}" in plan.schedule, plan.schedule
    one = planner._pipeline(facts, free, 4, fetches, placement, chunks=1)
    assert one.chunks == 1 and one.predicted_s == plan.chunk_times[1]
    # 1F1B holds stage s's activations for min(K - s, M) of the M micro-batches
    for s in range(4):
        held = min(4 - s, plan.chunks)
        assert plan.memory[s]["activations"] == (one.memory[s]["activations"] * held
                                                 // plan.chunks)
    gpipe = planner._pipeline(facts, free, 4, fetches, placement, chunks=8, schedule="gpipe")
    assert [m["activations"] for m in gpipe.memory] == [m["activations"] for m in one.memory]
    costly = CostModel(flops_per_s=1e12, bytes_per_s=1e12, node_overhead_s=1e-3,
                       link_latency_s=1e-3, link_bytes_per_s=1e12)
    assert planner._pipeline(facts, costly, 4, fetches, placement).chunks == 1  # fixed costs
    assert "timeline" in str(plan) and "stage 3:" in str(plan)
    assert f"{plan.chunks} micro-batches (1f1b)" in plan.to_dot()
