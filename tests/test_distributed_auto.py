"""`dj.Session(g, distribute="auto")`: the checks of `distributed_auto_ranks.py` in one process
(the plan is "single") and under `mpiexec -n 2` and `-n 4` (data parallel for an MLP that fits, a
pipeline for one whose state does not fit `max_memory`); the planner's pieces on their own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from distributed_auto_ranks import CHECKS, COSTS
from test_distributed import _mpiexec

import dongjing as dj
import dongjing.nn.functional as F
from dongjing.distributed import DistributedError, planner
from dongjing.distributed.cost_model import CostModel, node_flops, value_bytes
from dongjing.errors import ArgumentError, DongjingError

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "distributed_auto_ranks.py"


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_one_process_plans_single(check):
    check()


@pytest.mark.parametrize("ranks", [2, 4])
def test_ranks_plan_data_and_pipeline(ranks):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env["OMP_NUM_THREADS"] = "1"
    run = subprocess.run([_mpiexec(), "-n", str(ranks), sys.executable, str(SCRIPT)],
                         capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    for check in CHECKS:
        for rank in range(ranks):
            assert f"rank {rank}/{ranks}: {check.__name__} ok" in run.stdout, run.stdout
    print(run.stdout)  # the plans' predicted and measured step times (pytest -s shows them)


def _step(sizes=(4, 8, 3)):
    dj.manual_seed(0)
    model = dj.nn.Sequential(dj.nn.Linear(sizes[0], sizes[1]), dj.nn.Tanh(),
                             dj.nn.Linear(sizes[1], sizes[2]))
    opt = dj.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with dj.Graph() as g:
        x = dj.placeholder((None, sizes[0]))
        y = dj.placeholder((None,), dj.int64)
        loss = F.cross_entropy(model(x), y)
        train = opt.minimize(loss)
    return g, x, y, loss, train, model


def test_the_planner_reads_gradients_and_stages_off_the_graph():
    g, x, y, loss, train, model = _step()
    fetches = [loss._node, train._node]
    facts = planner.analyse(g, fetches, {x._node: 8, y._node: 8})
    assert facts.batch == 8 and set(facts.batch_inputs) == {x._node, y._node}
    assert sorted(v.attrs["ref"].shape for v in facts.gradients.values()) == sorted(
        tuple(p.shape) for p in model.parameters())
    assert all(f in facts.forward for f in set(facts.backward.values()) if f.dtype is not None
               and f.op.name not in ("placeholder", "constant", "variable"))
    stages = planner._stages(facts, planner._weights(facts, COSTS, "time"), 2)
    forward = [stages[n] for n in facts.forward]
    assert forward == sorted(forward) and set(forward) == {0, 1}  # consecutive, both used
    for b, f in facts.backward.items():
        if f in stages:
            assert stages[b] == stages[f]  # a gradient is computed on its forward's stage
    for v in facts.gradients.values():  # a parameter, its gradient and update on one stage
        assert v in stages
    plan = planner.choose(facts, COSTS, 2, fetches)
    names = {c.strategy for c in plan.candidates}
    assert names == {"data", "pipeline", "replicated", "tensor"}, plan
    want = min(c.predicted_s for c in plan.candidates if c.strategy != "tensor")
    assert plan.predicted_s == want  # data fits: a tensor split is not taken
    tensor = next(c for c in plan.candidates if c.strategy == "tensor")
    assert "data parallelism fits" in tensor.note, plan


def test_memory_limits_and_their_errors():
    g, x, y, loss, train, model = _step()
    fetches = [loss._node, train._node]
    facts = planner.analyse(g, fetches, {x._node: 6, y._node: 6})
    whole = planner.choose(facts, COSTS, 1, fetches)
    params = sum(p.numpy().nbytes for p in model.parameters())
    # the parameters and their momentum (and the optimizer's scalar flags)
    assert 2 * params <= whole.memory[0]["state"] <= 2 * params + 64
    assert whole.memory[0]["gradients"] == params
    with pytest.raises(DistributedError, match=r"no plan over 1 rank\(s\) fits max_memory.*"
                       rf"single, needs .*\({whole.memory_per_rank[0]} bytes\)"):
        planner.choose(facts, COSTS, 1, fetches, max_memory=whole.memory_per_rank[0] - 1)
    odd = planner.choose(planner.analyse(g, fetches, {x._node: 5, y._node: 5}), COSTS, 2,
                         fetches)
    assert odd.strategy != "data"
    assert any("does not split evenly" in c.note for c in odd.candidates)
    assert planner.parse_memory("2 MiB") == 2 << 20 and planner.parse_memory(1000) == 1000
    with pytest.raises(DistributedError, match="max_memory='lots'"):
        planner.parse_memory("lots")


def test_session_arguments_are_checked():
    g, *_ = _step()
    with pytest.raises(ArgumentError, match="distribute"):
        dj.Session(g, distribute="manual")
    with pytest.raises(DongjingError, match="distribute='auto'"):
        dj.Session(g, max_memory="1 MB")
    with pytest.raises(TypeError, match="CostModel"):
        dj.Session(g, distribute="auto", cost_model={"flops_per_s": 1})
    assert dj.Session(g).plan is None


def test_cost_model_counts_products_and_bytes():
    with dj.Graph():
        a = dj.placeholder((None, 8))
        w = dj.placeholder((8, 4))
        out = a @ w
    assert node_flops(out._node, 10) == 2 * 10 * 8 * 4
    assert value_bytes(out._node, 10) == 10 * 4 * 4
    model = CostModel(flops_per_s=1e9, bytes_per_s=1e9, node_overhead_s=0.0,
                      link_latency_s=1e-5, link_bytes_per_s=1e9)
    assert model.all_reduce_seconds(1e6, 2) == pytest.approx(2e-5 + 1e-3)
    assert model.all_reduce_seconds(1e6, 1) == 0.0
    measured = CostModel.measure()
    assert measured.flops_per_s > 0 and "measured" in measured.source
    assert np.allclose(measured.with_figures(model.as_array()).as_array(), model.as_array())
