"""W1's accuracy run: fresh init, 20 epochs over fixed permutations, test accuracy per system.
Every system that is right reaches the same accuracy from the same init and order."""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import numpy as np

from bench.check import describe_error, is_missing_api
from bench.systems import all_systems, dj_static
from bench.workloads import MlpData, digits_split, mlp_init

EPOCHS = 20
BATCH = 64


def epoch_orders(n: int, epochs: int = EPOCHS, seed: int = 0) -> list[np.ndarray]:
    """The e-th epoch visits rows in the order of the e-th permutation of one stream."""
    rng = np.random.default_rng(seed)
    return [rng.permutation(n) for _ in range(epochs)]


def train_and_test(build: Any, hidden: int = 256, epochs: int = EPOCHS) -> tuple[float, float]:
    """Train one system's MLP runner; its test accuracy and the seconds it took."""
    X_tr, y_tr, X_te, y_te = digits_split()
    data = MlpData(X_tr[:BATCH], y_tr[:BATCH], mlp_init([64, hidden, hidden, 10], 0))
    t0 = time.perf_counter()
    runner = build("mlp", data)
    for order in epoch_orders(len(X_tr), epochs):
        for start in range(0, len(order), BATCH):
            rows = order[start:start + BATCH]
            runner.set_batch(X_tr[rows], y_tr[rows])
            runner.step()
    acc = float(np.mean(np.argmax(runner.logits(X_te), axis=1) == y_te))
    return acc, time.perf_counter() - t0


def builders(names: list[str] | None) -> dict[str, Any]:
    """The systems that can train on varying batches (static graphs with a ``None`` batch)."""
    out = {}
    for s in all_systems():
        if s.floor or (names and s.name not in names and s.name != "numpy"):
            continue
        if s.name.startswith("dj-static-O"):
            out[s.name] = partial(dj_static.build, level=int(s.name[-1]), any_batch=True)
        else:
            out[s.name] = s.build
    return out


def main(names: list[str] | None = None) -> dict[str, Any]:
    """Print a table of test accuracy per system; return it."""
    results: dict[str, Any] = {}
    print(f"W1 accuracy run: {EPOCHS} epochs, batches of {BATCH}, init seed 0\n")
    print("| system | test accuracy | seconds |\n|---|---:|---:|")
    for name, build in builders(names).items():
        try:
            acc, secs = train_and_test(build)
            results[name] = {"accuracy": acc, "seconds": secs}
            print(f"| {name} | {acc:.4f} | {secs:.1f} |", flush=True)
        except Exception as e:  # reported, not raised: the other systems still run
            status = "skipped" if is_missing_api(e) else "error"
            results[name] = {status: describe_error(e)}
            print(f"| {name} | {status}: {describe_error(e)} | – |", flush=True)
    return results
