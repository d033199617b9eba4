"""Memory planning: a steady-state W1 training step at optimize=2 allocates a small fraction of
the bytes that the interpreter (optimize=0) allocates (measured with tracemalloc)."""

from __future__ import annotations

import tracemalloc

import numpy as np

import dongjing as dj


def _w1_training_step(level):
    """MLP 64 -> 256 -> 256 -> 10, cross-entropy, momentum SGD as assignments (W1's shapes)."""
    rng = np.random.default_rng(0)
    sizes = [64, 256, 256, 10]
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((64, 64), name="x")
        onehot = dj.placeholder((64, 10), name="onehot")
        params, h = [], x
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            bound = 1 / np.sqrt(n_in)
            w = dj.Variable(rng.uniform(-bound, bound, (n_in, n_out)).astype(np.float32),
                            name=f"W{i}")
            b = dj.Variable(rng.uniform(-bound, bound, n_out).astype(np.float32), name=f"b{i}")
            params += [w, b]
            h = h @ w + b
            if i < 2:
                h = dj.relu(h)
        loss = -dj.sum(dj.log_softmax(h, dim=1) * onehot) / 64.0
        grads = dj.gradients(loss, params)
        updates = []
        for p, gp in zip(params, grads):
            v = dj.Variable(np.zeros(p.shape, np.float32), trainable=False)
            v_new = dj.assign(v, v * 0.9 + gp)
            updates.append(dj.assign(p, p - v_new * 0.05))
        train = dj.group(*updates)
    feed = {x: rng.standard_normal((64, 64)).astype(np.float32),
            onehot: np.eye(10, dtype=np.float32)[rng.integers(0, 10, 64)]}
    sess = dj.Session(g, optimize=level)
    return lambda: sess.run([loss, train], feed)


def _bytes_allocated_by_one_step(step) -> int:
    for _ in range(3):
        step()  # warm-up: compile, first allocations of buffers
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        step()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before


def test_a_steady_training_step_allocates_under_a_tenth_of_the_interpreters_bytes():
    interpreted = _bytes_allocated_by_one_step(_w1_training_step(0))
    compiled = _bytes_allocated_by_one_step(_w1_training_step(2))
    assert interpreted > 1_000_000  # the interpreter keeps every intermediate of the step
    assert compiled < 0.1 * interpreted, (compiled, interpreted)


def test_levels_agree_on_the_training_trajectory():
    losses = []
    for level in (0, 1, 2):
        step = _w1_training_step(level)
        losses.append([float(step()[0]) for _ in range(4)])
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)
    np.testing.assert_allclose(losses[2], losses[0], rtol=1e-5)
    assert losses[0][-1] < losses[0][0]
