"""A short timing probe on the GPU: W1 (MLP train step) and W3 (elementwise chain) as dongjing
static graphs (CUDA graphs on and off) and eager, median µs per synchronised step."""

from __future__ import annotations

import os
import time

import numpy as np

import dongjing as dj
from dongjing.nn import functional as F


def timed(step, n=200, warm=10):
    import cupy

    for _ in range(warm):
        step()
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n // 5):
            step()
        cupy.cuda.Device().synchronize()
        times.append((time.perf_counter() - t0) / (n // 5) * 1e6)
    return float(np.median(times))


def w1_static(graphs: str):
    os.environ["DONGJING_CUDA_GRAPHS"] = graphs
    import cupy

    rng = np.random.default_rng(0)
    sizes = [64, 256, 256, 10]
    params = []
    for i in range(3):
        params.append(dj.Variable((rng.standard_normal((sizes[i], sizes[i + 1])) * 0.1)
                                  .astype(np.float32), device="cuda"))
        params.append(dj.Variable(np.zeros(sizes[i + 1], np.float32), device="cuda"))
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, shape=(64, 64))
        y = dj.placeholder(dj.int64, shape=(64,))
        h = x
        for i in range(3):
            h = dj.matmul(h, params[2 * i]) + params[2 * i + 1]
            h = dj.relu(h) if i < 2 else h
        loss = F.cross_entropy(h, y)
        train = dj.optim.SGD(params, lr=0.05, momentum=0.9).minimize(loss)
    sess = dj.Session(g)
    xb = cupy.asarray(rng.standard_normal((64, 64)).astype(np.float32))
    yb = cupy.asarray(rng.integers(0, 10, 64))
    feed = {x: xb, y: yb}
    us = timed(lambda: sess.run(train, feed))
    program = next(iter(sess._runs.values())).program
    return us, program.graphs.reason, program.graphs.replays


def w3_static(graphs: str):
    os.environ["DONGJING_CUDA_GRAPHS"] = graphs
    import cupy

    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, shape=(1 << 20,))
        out = (0.5 * x * (1 + dj.tanh(0.7978845608 * (x + 0.044715 * x**3)))).sum()  # W3
        (gx,) = dj.gradients(out, [x])
    sess = dj.Session(g)
    feed = {x: cupy.asarray(np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32))}
    us = timed(lambda: sess.run([out, gx], feed))
    program = next(iter(sess._runs.values())).program
    return us, program.graphs.reason, program.graphs.replays


def w5_static(graphs: str):
    os.environ["DONGJING_CUDA_GRAPHS"] = graphs
    import cupy

    from bench.systems.dj_common import rnn

    rng = np.random.default_rng(0)
    steps, batch, dim, hidden = 50, 32, 32, 64
    params = [dj.Variable((rng.standard_normal(s) * 0.1).astype(np.float32), device="cuda")
              for s in [(dim, hidden), (hidden, hidden), (hidden,)]]
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, shape=(steps, batch, dim))
        h0 = dj.constant(np.zeros((batch, hidden), np.float32))
        loss = rnn(dj, x, h0, *params, steps)
        grads = dj.gradients(loss, params)
    sess = dj.Session(g)
    feed = {x: cupy.asarray(rng.standard_normal((steps, batch, dim)).astype(np.float32))}
    us = timed(lambda: sess.run([loss, *grads], feed), n=100)
    program = next(iter(sess._runs.values())).program
    return us, program.graphs.reason, program.graphs.replays


def w1_eager():
    from dongjing import nn

    dj.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to("cuda")
    opt = dj.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y = dj.randn(64, 64, device="cuda"), dj.randint(0, 10, (64,), device="cuda")

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return timed(step, n=100)


if __name__ == "__main__":
    for name, fn in [("W1 static, CUDA graphs", lambda: w1_static("1")),
                     ("W1 static, plain", lambda: w1_static("0")),
                     ("W3 static, CUDA graphs", lambda: w3_static("1")),
                     ("W3 static, plain", lambda: w3_static("0")),
                     ("W5-like static, CUDA graphs", lambda: w5_static("1")),
                     ("W5-like static, plain", lambda: w5_static("0"))]:
        if os.environ.get("PROBE_ONLY") and os.environ["PROBE_ONLY"] not in name:
            continue
        try:
            us, reason, replays = fn()
            print(f"{name}: {us:.1f} us/step (replays {replays}, not captured: {reason})")
        except Exception as exc:  # keep probing the others
            import traceback

            traceback.print_exc()
            print(f"{name}: FAILED {type(exc).__name__}: {exc}")
    if os.environ.get("PROBE_ONLY"):
        raise SystemExit(0)
    try:
        print(f"W1 eager: {w1_eager():.1f} us/step")
    except Exception as exc:
        print(f"W1 eager: FAILED {type(exc).__name__}: {exc}")
