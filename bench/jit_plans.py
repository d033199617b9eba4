"""Predicted against measured step time of `dj.jit(step, distribute="auto")` plans:

    mpiexec -n 2 python -m bench.jit_plans [--steps 20]

For the models of `tests/jit_distribute_ranks.py` (an MLP that fits, one whose state is over
`max_memory`, a wide one whose whole copy is over it), with the tests' fixed cost figures:
rank 0 prints each plan, its predicted step time, the median measured one, and plain `dj.jit`'s
in the same processes.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dongjing as dj
import dongjing.distributed as dist
import dongjing.nn.functional as F
from dongjing.runtime import jit_distribute

COSTS = dist.CostModel(flops_per_s=1e10, bytes_per_s=5e9, node_overhead_s=5e-6,
                       link_latency_s=3e-5, link_bytes_per_s=2e9, source="given (tests)")
# (layer sizes, batch, max_memory rule: None, 3/4 of one process's, or just under data's)
MODELS = [((32, 64, 64, 4), 256, None), ((16, 95, 95, 95, 95, 4), 32, "3/4"),
          ((32, 256, 4), 32, "under data")]


def _step(sizes, **jit):
    dj.manual_seed(7)
    layers = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [dj.nn.Linear(a, b), dj.nn.Tanh()]
    model = dj.nn.Sequential(*layers[:-1])
    opt = dj.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    @dj.jit(**jit)
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def _batch(sizes, rows):
    rng = np.random.default_rng(2)
    return (dj.tensor(rng.standard_normal((rows, sizes[0])).astype(np.float32)),
            dj.tensor(rng.integers(0, sizes[-1], rows)))


def _limit(sizes, rows, rule) -> int | None:
    if rule is None:
        return None
    trace = _step(sizes)._trace_for(_batch(sizes, rows), {}, [])
    if rule == "3/4":
        plan, _, _ = jit_distribute.plan_trace(trace, COSTS, 1)
        return int(0.75 * plan.memory_per_rank[0])
    plan, _, _ = jit_distribute.plan_trace(trace, COSTS, dist.get_world_size())
    return min(c.peak_memory for c in plan.candidates if c.strategy == "data") - 1


def _median_step(step, batch, steps: int) -> float:
    step(*batch)
    times = []
    for _ in range(steps):
        dist.barrier()
        start = time.perf_counter()
        step(*batch)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args(argv)
    dist.init(timeout=120)
    for sizes, rows, rule in MODELS:
        batch = _batch(sizes, rows)
        plain = _median_step(_step(sizes), batch, args.steps)
        auto = _step(sizes, distribute="auto", cost_model=COSTS,
                     max_memory=_limit(sizes, rows, rule))
        measured = _median_step(auto, batch, args.steps)
        if dist.get_rank() == 0:
            print(f"MLP {'-'.join(map(str, sizes))} ({rows}), max_memory {rule}: plan "
                  f"{auto.plan.strategy}, predicted {auto.plan.predicted_s * 1e3:.2f} ms, "
                  f"measured {measured * 1e3:.2f} ms, plain dj.jit {plain * 1e3:.2f} ms",
                  flush=True)


if __name__ == "__main__":
    main()
