"""Nothing grows without bound: resident memory stays flat over 10,000 eager training steps,
Session.run calls and jitted calls (small tensors, so the loops are fast)."""

from __future__ import annotations

import gc
import mmap
import os

import numpy as np
import pytest

import dongjing as dj

STEPS = 10_000
ALLOWED = 8 << 20  # bytes: a leak of 1 KB per call would show as 10 MB


def _rss() -> int:
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _growth(step) -> int:
    for _ in range(STEPS // 10):  # warm up: caches, programs, allocator pools
        step()
    before = _rss()
    for _ in range(STEPS):
        step()
    return _rss() - before


pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")


def test_eager_training_steps_keep_rss_flat():
    w = dj.randn(3, requires_grad=True)
    x = dj.randn(3)
    opt = dj.optim.SGD([w], lr=1e-3)

    def step():
        opt.zero_grad()
        (dj.tanh(w * x) + w).sum().backward()
        opt.step()

    assert _growth(step) < ALLOWED


def test_the_measure_sees_a_leak():
    kept = []

    def leak():  # a fresh page each call (malloc could reuse memory freed by earlier tests)
        page = mmap.mmap(-1, mmap.PAGESIZE)
        page[0] = 1
        kept.append(page)

    assert _growth(leak) > ALLOWED // 2


@pytest.mark.parametrize("level", [0, 2])
def test_session_runs_keep_rss_flat(level):
    with dj.Graph() as g:
        x = dj.placeholder((None, 4), name="x")
        w = dj.Variable(np.ones((4, 2), np.float32), name="w")
        loss = dj.tanh(x @ w).sum()
        (gw,) = dj.gradients(loss, [w])
    sess = dj.Session(g, optimize=level)
    feed = np.ones((3, 4), np.float32)
    assert _growth(lambda: sess.run([loss, gw], {x: feed})) < ALLOWED


def test_jitted_calls_keep_rss_flat():
    @dj.jit
    def f(a, b):
        return dj.tanh(a * b + 1.0).sum()

    a, b = dj.ones(5), dj.randn(5)
    assert _growth(lambda: f(a, b)) < ALLOWED
