"""Where an eager GPU training step spends its time (issue 36, item 1).

    PYTHONPATH=src:. python tools/gpu_eager_profile.py [--device cuda|cpu] [--steps N]

For W1 (the MLP step with dj.optim.SGD), W5 (the RNN loop) and W7 (the bench's convnet cell)
in eager mode: the median µs per synchronised step,
the Python functions that take the host's time (cProfile, by own time), and dongjing's own
profiler table of one step. With ``--device cpu`` it runs the same steps on NumPy (a dry run).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import numpy as np

import dongjing as dj
from dongjing import nn
from dongjing.nn import functional as F


def synchronize(device: str) -> None:
    if device == "cuda":
        dj.cuda.synchronize()


def w1_step(device: str):
    dj.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(device)
    opt = dj.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y = dj.randn(64, 64, device=device), dj.randint(0, 10, (64,), device=device)

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def w5_step(device: str):
    rng = np.random.default_rng(0)
    steps, batch, dim, hidden = 50, 32, 32, 64
    w, u, b = (dj.tensor((rng.standard_normal(s) * 0.1).astype(np.float32), device=device,
                         requires_grad=True) for s in [(dim, hidden), (hidden, hidden), (hidden,)])
    x = dj.tensor(rng.standard_normal((steps, batch, dim)).astype(np.float32), device=device)

    def step():
        h = dj.zeros(batch, hidden, device=device)
        for t in range(steps):
            h = dj.tanh(x[t] @ w + h @ u + b)
        loss = (h * h).mean()
        for p in (w, u, b):
            p.grad = None
        loss.backward()

    return step


def w7_step(device: str):
    """The bench's own W7 cell (the MNIST convnet, manual momentum SGD)."""
    from bench.systems.dj_eager import Conv
    from bench.workloads import make_w7

    return Conv(dj, make_w7(), device=device).step


def median_us(step, device: str, n: int) -> float:
    for _ in range(5):
        step()
    synchronize(device)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        synchronize(device)
        times.append((time.perf_counter() - t0) / n * 1e6)
    return float(np.median(times))


def host_profile(step, device: str, n: int, top: int) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(n):
        step()
    synchronize(device)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--top", type=int, default=35)
    args = parser.parse_args()
    for name, make in [("W1 eager", w1_step), ("W5 eager", w5_step), ("W7 eager", w7_step)]:
        step = make(args.device)
        n = args.steps if name.startswith("W1") else max(args.steps // 8, 2)
        print(f"== {name} on {args.device}: {median_us(step, args.device, n):,.0f} µs per step")
        print(host_profile(step, args.device, n, args.top))
        with dj.profiler.profile() as prof:
            step()
            synchronize(args.device)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))


if __name__ == "__main__":
    main()
