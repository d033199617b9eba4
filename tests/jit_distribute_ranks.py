"""`dj.jit(step, distribute="auto")` checks that hold at any world size:
`tests/test_jit_distribute.py` runs them in one process (the plan is "single") and under
`mpiexec -n 2` and `-n 4`. Each trains an MLP written in PyTorch style (`model(x)`,
`loss.backward()`, `opt.step()` inside the jitted step) and compares every step with the same
model under a plain `dj.jit` in this process: the losses, the results, and every rank's eager
parameters and `.grad` after each call. Each prints the plan's predicted and measured step
time."""

from __future__ import annotations

import sys
import time

import numpy as np

import dongjing as dj
import dongjing.distributed as dist
import dongjing.nn.functional as F
from dongjing.runtime import jit_distribute

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
    return (dj.tensor(rng.standard_normal((rows, features)).astype(np.float32)),
            dj.tensor(rng.integers(0, classes, rows)))


def _trainer(sizes, adam=False, **jit):
    """A model, and its training step jitted with `jit`'s options: the loss, the logits and
    the count of right answers."""
    model = _mlp(sizes)
    opt = (dj.optim.Adam(model.parameters(), lr=0.01) if adam else
           dj.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))

    @dj.jit(**jit)
    def step(x, y):
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        return loss, logits, (logits.argmax(1) == y).sum()

    return model, step


def _state(model):
    return [(p.numpy().copy(), p.grad.numpy().copy()) for p in model.parameters()]


def _train(sizes, rows, adam=False, **jit):
    """STEPS steps: per step the results and the eager state after it; the step's plan and the
    fastest measured step after the first."""
    model, step = _trainer(sizes, adam, **jit)
    x, y = _data(rows, sizes[0])
    results, states, seconds = [], [], []
    for _ in range(STEPS):
        dist.barrier()
        start = time.perf_counter()
        loss, logits, right = step(x, y)
        seconds.append(time.perf_counter() - start)
        results.append((loss.item(), logits.numpy(), int(right.item())))
        states.append(_state(model))
    return results, states, getattr(step, "plan", None), min(seconds[1:])


def _same(got, want):
    for (loss, logits, right), (loss0, logits0, right0) in zip(got[0], want[0]):
        np.testing.assert_allclose(loss, loss0, rtol=1e-5, err_msg="loss")
        np.testing.assert_allclose(logits, logits0, rtol=1e-4, atol=1e-5, err_msg="logits")
        assert right == right0, (right, right0)
    for step, (state, state0) in enumerate(zip(got[1], want[1])):  # current after every call
        for i, ((p, g), (p0, g0)) in enumerate(zip(state, state0)):
            np.testing.assert_allclose(p, p0, rtol=1e-4, atol=1e-6,
                                       err_msg=f"parameter {i} after step {step}")
            np.testing.assert_allclose(g, g0, rtol=1e-4, atol=1e-6,
                                       err_msg=f"gradient {i} after step {step}")


def _report(name, plan, seconds):
    print(f"rank {dist.get_rank()}/{dist.get_world_size()}: jit {name}: plan {plan.strategy}, "
          f"predicted {plan.predicted_s * 1e3:.3f} ms, measured {seconds * 1e3:.3f} ms per step",
          flush=True)


def _memory(sizes, rows, strategy="single") -> int:
    """What a rank would hold for the model's jitted step under `strategy` (the planner's
    prediction for this world size; "single": for one process)."""
    model, step = _trainer(sizes)
    x, y = _data(rows, sizes[0])
    trace = step._trace_for((x, y), {}, [])
    world = 1 if strategy == "single" else dist.get_world_size()
    plan, _, _ = jit_distribute.plan_trace(trace, COSTS, world)
    return min(c.peak_memory for c in plan.candidates if c.strategy == strategy)


def check_a_jitted_step_that_fits_runs_data_parallel():
    sizes, rows = (32, 64, 64, 4), 256
    want = _train(sizes, rows)
    got = _train(sizes, rows, distribute="auto", cost_model=COSTS)
    plan = got[2]
    assert plan.strategy == ("data" if dist.get_world_size() > 1 else "single"), str(plan)
    if dist.get_world_size() == 1:  # one process: exactly plain dj.jit
        assert [r[0] for r in got[0]] == [r[0] for r in want[0]]
        for state, state0 in zip(got[1], want[1]):
            assert all((p == p0).all() and (g == g0).all()
                       for (p, g), (p0, g0) in zip(state, state0))
    _same(got, want)
    _report("mlp 32-64-64-4, batch 256", plan, got[3])


def check_a_jitted_step_too_big_for_one_rank_is_split():
    # hidden sizes that split evenly over no world size: no tensor split, so a pipeline
    sizes, rows = (16, 95, 95, 95, 95, 4), 32
    limit = int(0.75 * _memory(sizes, rows))
    if dist.get_world_size() == 1:
        try:
            _train(sizes, rows, distribute="auto", cost_model=COSTS, max_memory=limit)
        except dist.DistributedError as exc:
            assert "no plan over 1 rank(s) fits max_memory" in str(exc), exc
        else:
            raise AssertionError("a plan over max_memory ran")
        return
    want = _train(sizes, rows)
    got = _train(sizes, rows, distribute="auto", cost_model=COSTS, max_memory=limit)
    plan = got[2]
    assert plan.strategy == "pipeline", str(plan)
    assert max(plan.memory_per_rank) <= limit, str(plan)
    assert all(plan.rank_nodes), str(plan)  # every rank runs a stage
    assert "every rank's eager model is current" in plan.schedule, plan.schedule
    _same(got, want)
    _report(f"mlp {'-'.join(map(str, sizes))}, batch {rows}, max_memory {limit} B", plan,
            got[3])


def check_a_wide_jitted_step_too_big_for_one_rank_is_split_by_tensor():
    sizes, rows = (32, 256, 4), 32
    if dist.get_world_size() == 1:
        return  # one process: a limit rules every plan out, as the check above shows
    limit = _memory(sizes, rows, "data") - 1  # a whole copy of the model per rank does not fit
    for adam in (False, True):  # Adam: both moments of each split weight split with it
        want = _train(sizes, rows, adam)
        got = _train(sizes, rows, adam, distribute="auto", cost_model=COSTS, max_memory=limit)
        plan = got[2]
        assert plan.strategy == "tensor", str(plan)
        assert max(plan.memory_per_rank) <= limit, str(plan)
        _same(got, want)
    _report(f"mlp {'-'.join(map(str, sizes))}, batch {rows}, max_memory {limit} B", plan,
            got[3])


def check_inference_and_what_is_refused():
    model = _mlp((4, 8, 2))
    slow = dist.CostModel(flops_per_s=1e6, bytes_per_s=1e6, source="given (slow compute)")
    forward = dj.jit(model, distribute="auto", cost_model=slow)  # splitting the rows pays
    x = dj.tensor(np.linspace(-1, 1, 8 * 4 * dist.get_world_size(), dtype=np.float32)
                  .reshape(-1, 4))
    with dj.no_grad():
        out = forward(x)
        want = model(x)
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert forward.plan.strategy == ("data" if dist.get_world_size() > 1 else "single"), str(
        forward.plan)
    assert len(list(forward.parameters())) == 4  # the jitted module's own API
    if dist.get_world_size() > 1:  # results to differentiate outside: refused on every rank
        try:
            forward(x)
        except dist.DistributedError as exc:
            assert "plan data" in str(exc) and "dj.no_grad()" in str(exc), exc
        else:
            raise AssertionError("a differentiable distributed result was returned")


def _batch_norm_step(**jit):
    dj.manual_seed(3)
    model = dj.nn.Sequential(dj.nn.Linear(8, 16), dj.nn.BatchNorm1d(16), dj.nn.Tanh(),
                             dj.nn.Linear(16, 4))
    opt = dj.optim.SGD(model.parameters(), lr=0.1)

    @dj.jit(**jit)
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return model, step


def _same_on_every_rank(array, what):
    t = dj.tensor(np.asarray(array, np.float64))
    low, high = -dist.all_reduce(-t, "max").numpy(), dist.all_reduce(t, "max").numpy()
    np.testing.assert_array_equal(low, high, err_msg=f"{what} differs between ranks")


def check_batch_norm_statistics_are_averaged_over_the_ranks():
    """Data parallel: each rank normalizes by its own rows (as DDP without SyncBatchNorm), and
    the running statistics are the ranks' average, the same on every rank; the running mean
    after one step is the whole batch's."""
    slow = dist.CostModel(flops_per_s=1e6, bytes_per_s=1e6, source="given (slow compute)")
    model, step = _batch_norm_step(distribute="auto", cost_model=slow)
    want_model, want_step = _batch_norm_step()
    x, y = _data(16 * dist.get_world_size(), 8)
    step(x, y)
    want_step(x, y)
    assert step.plan.strategy == ("data" if dist.get_world_size() > 1 else "single"), str(
        step.plan)
    np.testing.assert_allclose(model[1].running_mean.numpy(),
                               want_model[1].running_mean.numpy(), rtol=1e-5, atol=1e-6)
    for _ in range(2):
        step(x, y)
    for name, value in model.state_dict().items():
        _same_on_every_rank(value.numpy(), name)


CHECKS = [check_a_jitted_step_that_fits_runs_data_parallel,
          check_a_jitted_step_too_big_for_one_rank_is_split,
          check_a_wide_jitted_step_too_big_for_one_rank_is_split_by_tensor,
          check_batch_norm_statistics_are_averaged_over_the_ranks,
          check_inference_and_what_is_refused]

if __name__ == "__main__":
    dist.init(timeout=120)
    for check in CHECKS:
        check()
        print(f"rank {dist.get_rank()}/{dist.get_world_size()}: {check.__name__} ok", flush=True)
    sys.exit(0)
