"""`dj.jit(fn, distribute="auto")`: the checks of `jit_distribute_ranks.py` in one process (the
plan is "single", bit-identical to plain `dj.jit`) and under `mpiexec -n 2` and `-n 4` (data
parallel for an MLP step that fits, a pipeline and a tensor split for ones whose state does not
fit `max_memory`); each plan's runner at world size 1 against plain `dj.jit`; the planning
view of a trace; argument errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from jit_distribute_ranks import CHECKS, COSTS, _data, _state, _trainer
from test_distributed import run_rank_checks

import dongjing as dj
from dongjing.distributed import sharding
from dongjing.distributed.world import ensure_init
from dongjing.errors import ArgumentError, JitError
from dongjing.runtime import jit_distribute

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "jit_distribute_ranks.py"
SIZES = (4, 8, 6, 3)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_one_process_plans_single(check):
    check()


@pytest.mark.parametrize("ranks", [2, 4])
def test_ranks_plan_data_pipeline_and_tensor(ranks):
    stdout = run_rank_checks(SCRIPT, ranks, CHECKS)
    for strategy in ("data", "pipeline", "tensor"):
        assert f"plan {strategy}," in stdout, stdout
    print(stdout)  # the plans' predicted and measured step times (pytest -s shows them)


def _traced(rows=8):
    model, step = _trainer(SIZES)
    x, y = _data(rows, SIZES[0], SIZES[-1])
    arrays: list = []
    trace = step._trace_for((x, y), {}, arrays)
    return model, step, trace, arrays, (x, y)


def _runner(kind, step, trace, args):
    world = ensure_init()
    if kind == "data":
        _, batch_inputs = jit_distribute.batch_of(trace)
        return jit_distribute.DataRun(step, trace, args, {}, batch_inputs, world, "test")
    if kind == "pipeline":
        return jit_distribute.PipelineRun(trace, {}, step.optimize, world)
    facts, _, original, _ = jit_distribute.analyse_trace(trace)
    layouts = sharding.plan_layouts(facts.order, facts.forward, set(facts.gradients.values()),
                                    world.size)
    return jit_distribute.TensorRun(trace, jit_distribute.original_layouts(layouts, original),
                                    step.optimize, world)


@pytest.mark.parametrize("kind", ["data", "pipeline", "tensor"])
def test_each_plans_runner_in_one_process_equals_plain_jit(kind):
    """The data copy (its all-reduces the identity), the partition (everything on rank 0) and
    the tensor copy (shards cut from, and written back into, the eager Parameters) train as
    plain dj.jit trains, and leave the eager model as it leaves it."""
    model, step, trace, arrays, args = _traced()
    runner = _runner(kind, step, trace, args)
    want_model, want_step = _trainer(SIZES)
    for _ in range(3):
        loss, logits, right = runner(arrays, args, {})
        loss0, logits0, right0 = want_step(*args)
        np.testing.assert_allclose(loss.numpy(), loss0.numpy(), rtol=1e-6)
        np.testing.assert_allclose(logits.numpy(), logits0.numpy(), rtol=1e-5, atol=1e-6)
        assert int(right.item()) == int(right0.item())
        for (p, g), (p0, g0) in zip(_state(model), _state(want_model)):
            np.testing.assert_allclose(p, p0, rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(g, g0, rtol=1e-5, atol=1e-7)
    if kind == "tensor":
        assert {"tp_reduce", "tp_gather"} <= {n.op.name for n in runner.copy.graph.nodes}
        assert len(runner.synced) == 2 * 3  # 3 split Parameters and their momentum


def test_the_planning_view_prices_the_batch_per_row():
    _, _, trace, _, _ = _traced(rows=10)
    batch, batch_inputs = jit_distribute.batch_of(trace)
    assert batch == 10 and [n.name for n in batch_inputs] == ["x", "y"]
    facts, fetches, original, _ = jit_distribute.analyse_trace(trace)
    assert facts.batch == 10 and {n.name for n in facts.batch_inputs} == {"x", "y"}
    assert len(facts.gradients) == 6  # the three Linear layers' weights and biases
    shapes = {n.name: n.shape for n in original}
    assert shapes["matmul_0"] == (None, 8)  # an activation: per row
    assert any(s[-1] is None and len(s) == 2 for name, s in shapes.items()
               if name.startswith("permute"))  # a transposed activation (a weight gradient's)
    assert shapes["0.weight"] == (8, 4)  # a parameter: whole
    assert all(original[n].shape == tuple(d if d is not None else 10 for d in n.shape)
               for n in original)  # the trace itself keeps its concrete shapes
    assert fetches[-1].op.name == "group"  # the updates: one training op, not fetched values
    plan, _, _ = jit_distribute.plan_trace(trace, COSTS, 2)
    data = next(c for c in plan.candidates if c.strategy == "data")
    replicated = next(c for c in plan.candidates if c.strategy == "replicated")
    assert data.peak_memory < replicated.peak_memory  # half the rows' activations


def test_one_process_is_plain_jit_and_shows_its_plan():
    model, step = _trainer(SIZES, distribute="auto", cost_model=COSTS)
    assert step.plan is None and "not planned yet" in repr(step)
    x, y = _data(8, SIZES[0], SIZES[-1])
    step(x, y)
    assert step.plan.strategy == "single" and "plan: single over 1 rank(s)" in str(step.plan)
    assert "single" in repr(step) and step.cache_size == 1  # the plain jit's API
    assert step.graph(x, y) is not None


def test_arguments_are_checked():
    def f(x):
        return x * 2

    with pytest.raises(ArgumentError, match="distribute"):
        dj.jit(f, distribute="manual")
    with pytest.raises(JitError, match="distribute='auto'"):
        dj.jit(f, max_memory="1 MB")
    with pytest.raises(TypeError, match="CostModel"):
        dj.jit(f, distribute="auto", cost_model={"flops_per_s": 1})
    with pytest.raises(JitError, match="check= and check_numerics="):
        dj.jit(f, distribute="auto", check=True)
    with pytest.raises(dj.distributed.DistributedError, match="max_memory='lots'"):
        dj.jit(f, distribute="auto", max_memory="lots")
    decorated = dj.jit(distribute="auto", cost_model=COSTS)(f)
    np.testing.assert_array_equal(decorated(dj.ones(3)).numpy(), [2.0, 2.0, 2.0])
    assert decorated.plan.strategy == "single" and decorated.plan.batch == 3
