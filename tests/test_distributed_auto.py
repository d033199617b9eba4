"""`dj.Session(g, distribute="auto")`: the checks of `distributed_auto_ranks.py` in one process
(the plan is "single") and under `mpiexec -n 2` and `-n 4` (data parallel for an MLP that fits, a
pipeline for one whose state does not fit `max_memory`); the planner's pieces on their own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from distributed_auto_ranks import CHECKS, COSTS
from test_distributed import run_rank_checks

import dongjing as dj
import dongjing.nn.functional as F
from dongjing.distributed import DistributedError, planner, sharding, tensor_parallel_graph
from dongjing.distributed.cost_model import CostModel, node_flops, value_bytes
from dongjing.errors import ArgumentError, DongjingError

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "distributed_auto_ranks.py"


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_one_process_plans_single(check):
    check()


@pytest.mark.parametrize("ranks", [2, 4])
def test_ranks_plan_data_and_pipeline(ranks):
    stdout = run_rank_checks(SCRIPT, ranks, CHECKS)
    print(stdout)  # the plans' predicted and measured step times (pytest -s shows them)


def _step(sizes=(4, 8, 3)):
    dj.manual_seed(0)
    layers = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [dj.nn.Linear(a, b), dj.nn.Tanh()]
    model = dj.nn.Sequential(*layers[:-1])
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



def test_tensor_layouts_pair_products_and_split_the_optimizer_state():
    g, x, y, loss, train, model = _step((4, 8, 6, 3))
    fetches = [loss._node, train._node]
    facts = planner.analyse(g, fetches, {x._node: 8, y._node: 8})
    trainable = set(facts.gradients.values())
    layouts = sharding.plan_layouts(facts.order, facts.forward, trainable, 2)
    names = {v.name: d for v, d in layouts.shards.items() if v.name[0].isdigit()}
    # Linear 4-8 column (its weight's rows and bias), Linear 8-6 row (its weight's columns);
    # the bias after the row product stays whole, the third product has no partner
    assert names == {"0.weight": 0, "0.bias": 0, "2.weight": 1}, names
    momentum = [v for v in layouts.shards if not v.name[0].isdigit()]
    assert len(momentum) == 3  # one per split parameter, split the same way
    reads = {(i, w) for n, ws in layouts.inputs.items() for i, w in zip(n.inputs, ws)
             if i.dtype is not None}
    steps = [s[0] for i, w in reads for s in sharding.conversion(layouts.of[i], w)]
    assert steps == ["reduce"], steps  # the row product's partial sum, once per step
    assert sharding.plan_layouts(facts.order, facts.forward, trainable, 3) is None  # 8 % 3
    plan = planner._tensor(facts, COSTS, 2, fetches, layouts)
    whole = planner.choose(facts, COSTS, 1, fetches)
    assert plan.memory[0]["state"] < whole.memory[0]["state"]
    assert [c[1] for c in plan.collectives] == ["reduce"]
    assert "tensor over 2 rank(s)" in str(plan) and "reduce: matmul_1" in str(plan)
    dot = plan.to_dot()
    assert 'rank1 [label="rank 1: 1/2 of the split weights' in dot and "1 collective(s)" in dot


def test_tensor_rewrite_in_one_process_equals_the_graph():
    """The rewrite at world size 1 (every collective the identity) trains its shards as the
    whole graph trains the Variables; the split Variables themselves are left as they were,
    the whole ones (the last bias) are updated in place."""
    g, x, y, loss, train, model = _step((4, 8, 6))
    fetches = [loss._node, train._node]
    facts = planner.analyse(g, fetches, {x._node: 5, y._node: 5})
    layouts = sharding.plan_layouts(facts.order, facts.forward, set(facts.gradients.values()), 1)
    shards = tensor_parallel_graph.Shards()
    copy = tensor_parallel_graph.rewrite(g, fetches, layouts, shards)
    assert "tp_reduce" in {n.op.name for n in copy.graph.nodes}
    before = {n: p.numpy().copy() for n, p in model.named_parameters()}
    rng = np.random.default_rng(0)
    xv, yv = rng.standard_normal((5, 4)).astype(np.float32), rng.integers(0, 6, 5)
    local = dj.Session(copy.graph, optimize=2)
    feed = {copy.placeholders[x._node]: xv, copy.placeholders[y._node]: yv}
    got = [local.run(copy.fetches, feed)[0] for _ in range(3)]
    g2, x2, y2, loss2, train2, whole_model = _step((4, 8, 6))  # the same model, whole
    whole = dj.Session(g2)
    want = [whole.run([loss2, train2], {x2: xv, y2: yv})[0] for _ in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    trained = dict(whole_model.named_parameters())
    for name in ("0.weight", "0.bias", "2.weight"):
        np.testing.assert_array_equal(dict(model.named_parameters())[name].numpy(),
                                      before[name])
        ref = dict(model.named_parameters())[name]
        np.testing.assert_allclose(shards.get(ref, 0, name).numpy(), trained[name].numpy(),
                                   rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(dict(model.named_parameters())["2.bias"].numpy(),
                               trained["2.bias"].numpy(), rtol=1e-5, atol=1e-7)
