"""Converted loops at scale: gradients through 10, 100 and 1,000 iterations of a data-dependent
loop equal eager; the memory kept for the backward pass grows linearly with the iterations;
compiled graphs generate their loops (condition and body inline)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import dongjing as dj
from dongjing.nn import Parameter
from dongjing.runtime.interpreter import Interpreter

SIZE = 2000  # 16 KB per iteration of float64 state


def loop(h, n, w):
    i = n * 0
    while i < n:
        h = dj.tanh(h * w + 0.1)
        i = i + 1
    return (h * h).sum()


def step(h, n, w):
    loss = loop(h, n, w)
    loss.backward()
    return loss


def _run(runner, w, h0, n):
    w.grad = None
    loss = runner(dj.tensor(h0), dj.tensor(np.int64(n)), w)
    return loss.numpy(), w.grad.numpy()


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(0)
    w0 = rng.uniform(0.5, 1.0, SIZE)
    h0 = rng.uniform(-1, 1, SIZE)
    w = Parameter(dj.tensor(w0))
    return w, h0, dj.jit(step)


@pytest.mark.parametrize("n", [10, 100, 1000])
def test_gradients_through_long_loops_equal_eager(setup, n):
    w, h0, jitted = setup
    eager = _run(step, w, h0, n)
    compiled = _run(jitted, w, h0, n)
    for e, j in zip(eager, compiled):
        np.testing.assert_allclose(j, e, rtol=1e-10, atol=1e-12)
    assert jitted.cache_size == 1  # one graph for every iteration count


def _peak(jitted, w, h0, n) -> int:
    _run(jitted, w, h0, 1)  # compiled and warm
    tracemalloc.start()
    try:
        _run(jitted, w, h0, n)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_backward_memory_grows_linearly_with_iterations(setup):
    w, h0, jitted = setup
    peaks = {n: _peak(jitted, w, h0, n) for n in (10, 100, 1000)}
    per_iteration = SIZE * 8
    grow_small = (peaks[100] - peaks[10]) / 90
    grow_large = (peaks[1000] - peaks[100]) / 900
    # each iteration keeps its state (one array) for the backward pass, no more, no bound
    assert 0.5 * per_iteration < grow_large < 3 * per_iteration, peaks
    assert 0.3 < grow_large / grow_small < 3, peaks


def test_compiled_graphs_generate_their_loops(setup):
    w, h0, jitted = setup
    w.grad = None  # the state the runs below see (a .grad change would trace again)
    args = (dj.tensor(h0), dj.tensor(np.int64(3)), w)
    graph = jitted.optimized_graph(*args)
    _run(jitted, w, h0, 3)
    loops = [n for n in graph.nodes if n.op.name in ("while_record", "while_grad")]
    assert len(loops) == 2  # the forward loop (recording) and its reverse loop
    source = jitted.source(*args)
    # each loop is a generated function: condition and body inline, no sub-program per step
    assert source.count("def _loop_") == 2 and "while True:" in source
    assert "for _k in range(_n - 1, -1, -1):" in source
    interpreted = dj.jit(loop, optimize=0)
    args = (dj.tensor(h0), dj.tensor(np.int64(3)), dj.tensor(w.numpy()))
    graph = interpreted.optimized_graph(*args)
    interpreted(*args)
    subs = [v for node in graph.nodes for v in node.attrs.values() if isinstance(v, dj.Graph)]
    assert subs and all(isinstance(s._program[1][None], Interpreter) for s in subs)
