"""Step times of one training loop three ways: pure eager, `dj.jit(model)` with the eager loss,
backward and optimizer, and the whole step traced by `dj.jit` (update included).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=src python -m bench.jit_modes

Models: W1's MLP (64-256-256-10, batch 64) and the digits CNN of examples/digits.py (batch 64);
SGD lr 0.05 momentum 0.9, F.cross_entropy. Median of repeats, after a warm-up.

`--clock cpu` times with the process's CPU time (all its threads) instead of the wall clock:
steadier on a shared, loaded machine, where the wall clock also counts the time other
processes hold the cores.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import numpy as np


def _models():
    import dongjing.nn as nn

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
            self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 2 * 2, 10))

        def forward(self, x):
            return self.classifier(self.features(x.reshape(-1, 1, 8, 8)))

    def mlp():
        return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                             nn.Linear(256, 10))

    return {"W1-mlp": mlp, "digits-cnn": CNN}


def _step_fn(mode: str, make):
    import dongjing as dj
    import dongjing.nn.functional as F

    dj.manual_seed(0)
    model = make()
    opt = dj.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    run = dj.jit(model) if mode == "jit-model" else model

    def step(x, y):
        loss = F.cross_entropy(run(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return dj.jit(step) if mode == "traced-step" else step


MODES = ("eager", "jit-model", "traced-step")


def time_modes(make, repeats: int, inner: int, clock=time.perf_counter) -> dict:
    """{mode: (median µs per step, first-call seconds)}; the modes' repeats are interleaved so
    that a change in the machine's load affects them alike."""
    import dongjing as dj

    rng = np.random.default_rng(0)
    x = dj.tensor(rng.standard_normal((64, 64)).astype(np.float32))
    y = dj.tensor(rng.integers(0, 10, 64))
    steps, first = {}, {}
    for mode in MODES:
        steps[mode] = _step_fn(mode, make)
        start = time.perf_counter()
        steps[mode](x, y).item()
        first[mode] = time.perf_counter() - start
        for _ in range(5):
            steps[mode](x, y)
    times: dict = {mode: [] for mode in MODES}
    for _ in range(repeats):
        for mode in MODES:
            gc.collect()
            start = clock()
            for _ in range(inner):
                steps[mode](x, y)
            times[mode].append((clock() - start) / inner * 1e6)
    return {mode: (statistics.median(times[mode]), first[mode]) for mode in MODES}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.jit_modes", description=__doc__)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--inner", type=int, default=20)
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="wall clock (default) or the process's CPU time")
    args = p.parse_args(argv)
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    print(f"{'model':<11} {'mode':<12} {'us/step':>9} {'first call s':>13}")
    for name, make in _models().items():
        for mode, (us, first) in time_modes(make, args.repeats, args.inner, clock).items():
            print(f"{name:<11} {mode:<12} {us:9.0f} {first:13.3f}", flush=True)


if __name__ == "__main__":
    main()
