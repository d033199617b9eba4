"""How fast a training step is in a script written the way a user writes one: the public API,
no settings, no environment variables. An MLP (W1's shapes) and a tanh RNN (W5's) trained with
`dj.optim.SGD`, eagerly, under `dj.jit` and as a static graph, and with PyTorch where it is
installed (same shapes, same threads as NumPy's BLAS gets by default).

    python examples/user_speed.py              # median ms per step of each
    python examples/user_speed.py --steps 20   # fewer steps (a quick look)
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F


def median_ms(step: Callable[[], object], steps: int) -> float:
    """Median wall-clock ms of `steps` calls of `step`, after 5 warm-up calls."""
    for _ in range(5):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def mlp_steps(x: np.ndarray, y: np.ndarray) -> dict[str, Callable[[], object]]:
    """One MLP training step per way of running dongjing."""
    def model() -> nn.Module:
        dj.manual_seed(0)
        return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                             nn.Linear(256, 10))

    xs, ys = dj.tensor(x), dj.tensor(y)
    eager, traced = model(), model()
    opt_eager = dj.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
    opt_traced = dj.optim.SGD(traced.parameters(), lr=0.05, momentum=0.9)

    def eager_step() -> None:
        opt_eager.zero_grad()
        F.cross_entropy(eager(xs), ys).backward()
        opt_eager.step()

    @dj.jit
    def jit_step(xb: dj.Tensor, yb: dj.Tensor) -> dj.Tensor:
        opt_traced.zero_grad()
        loss = F.cross_entropy(traced(xb), yb)
        loss.backward()
        opt_traced.step()
        return loss

    graph = dj.Graph()
    with graph.as_default():
        xp = dj.placeholder(dj.float32, shape=(None, 64))
        yp = dj.placeholder(dj.int64, shape=(None,))
        net = model()
        train = dj.optim.SGD(net.parameters(), lr=0.05, momentum=0.9).minimize(
            F.cross_entropy(net(xp), yp))
    sess = dj.Session(graph)
    return {"eager": eager_step, "dj.jit": lambda: jit_step(xs, ys),
            "static": lambda: sess.run(train, {xp: x, yp: y})}


def rnn_steps(x: np.ndarray) -> dict[str, Callable[[], object]]:
    """One step of a 50-step tanh RNN's loss and gradients, eagerly and under dj.jit."""
    rng = np.random.default_rng(0)
    params = [dj.tensor((rng.standard_normal(s) * 0.1).astype(np.float32), requires_grad=True)
              for s in [(32, 64), (64, 64), (64,)]]
    opt = dj.optim.SGD(params, lr=0.01)
    xs = dj.tensor(x)

    def step(inputs: dj.Tensor) -> dj.Tensor:
        w, u, b = params
        h = dj.zeros(inputs.shape[1], 64)
        for t in range(inputs.shape[0]):
            h = dj.tanh(inputs[t] @ w + h @ u + b)
        loss = h.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    compiled = dj.jit(step)
    return {"eager": lambda: step(xs), "dj.jit": lambda: compiled(xs)}


def torch_steps(x: np.ndarray, y: np.ndarray, seq: np.ndarray) -> dict[str, Callable[[], object]]:
    """The same two steps in PyTorch (eager), or nothing where it is not installed."""
    try:
        import torch
    except ImportError:
        return {}
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                              torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(mlp.parameters(), lr=0.05, momentum=0.9)
    xt, yt, st = torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(seq)
    w, u, b = (torch.randn(*s, requires_grad=True) for s in [(32, 64), (64, 64), (64,)])
    ropt = torch.optim.SGD([w, u, b], lr=0.01)

    def mlp_step() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(mlp(xt), yt).backward()
        opt.step()

    def rnn_step() -> None:
        h = torch.zeros(st.shape[1], 64)
        for t in range(st.shape[0]):
            h = torch.tanh(st[t] @ w + h @ u + b)
        ropt.zero_grad()
        h.sum().backward()
        ropt.step()

    return {"mlp": mlp_step, "rnn": rnn_step}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 64)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    seq = rng.standard_normal((50, 32, 32)).astype(np.float32)
    rows = [("MLP 64-256-256-10, batch 64", mlp_steps(x, y), "mlp"),
            ("RNN 50 steps, batch 32, 32->64", rnn_steps(seq), "rnn")]
    reference = torch_steps(x, y, seq)
    for title, steps, key in rows:
        print(title)
        ours = {name: median_ms(step, args.steps) for name, step in steps.items()}
        theirs = median_ms(reference[key], args.steps) if key in reference else None
        for name, ms in ours.items():
            ratio = f"  ({ms / theirs:.2f}x PyTorch eager)" if theirs else ""
            print(f"  dongjing {name:7s} {ms:8.3f} ms{ratio}")
        if theirs:
            print(f"  PyTorch eager    {theirs:8.3f} ms")


if __name__ == "__main__":
    main()
