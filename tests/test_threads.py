"""Threads: grad mode and the default graph are per thread; concurrent runs of one Session or
one jitted function give exactly the single-threaded results (issue 19 item 3)."""

import threading

import numpy as np
import pytest

import dongjing as dj

N_THREADS = 8
N_CALLS = 40


def _run_threads(work, n=N_THREADS):
    """Run `work(i)` in `n` threads started together; re-raise the first failure."""
    errors = []
    barrier = threading.Barrier(n)

    def target(i):
        try:
            barrier.wait()
            work(i)
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _inputs(i, k):
    return np.random.default_rng(1000 * i + k).standard_normal((64, 48)).astype(np.float32)


def _graph():
    with dj.Graph() as g:
        x = dj.placeholder((64, 48), dj.float32, name="x")
        h = dj.tanh(x * 2.0 + 1.0) * x - 0.5
        y = dj.sigmoid(h @ dj.transpose(h, 0, 1)) * 3.0
        out = y.sum(1) + h.sum(1)
    return g, x, out


@pytest.mark.parametrize("level", [0, 2])
def test_one_session_many_threads_matches_single_thread(level):
    g, x, out = _graph()
    sess = dj.Session(g, optimize=level)
    expected = {(i, k): sess.run(out, {x: _inputs(i, k)})
                for i in range(N_THREADS) for k in range(N_CALLS)}
    got = {}

    def work(i):
        for k in range(N_CALLS):
            got[i, k] = sess.run(out, {x: _inputs(i, k)})

    _run_threads(work)
    for key, value in expected.items():
        np.testing.assert_array_equal(got[key], value, err_msg=str(key))


def test_one_jitted_function_many_threads_matches_single_thread():
    @dj.jit
    def f(a):
        h = dj.tanh(a * 2.0 + 1.0) * a - 0.5
        return (dj.sigmoid(h @ dj.transpose(h, 0, 1)) * 3.0).sum(1) + h.sum(1)

    expected = {(i, k): f(dj.tensor(_inputs(i, k))).numpy()
                for i in range(N_THREADS) for k in range(N_CALLS)}
    got = {}

    def work(i):
        for k in range(N_CALLS):
            got[i, k] = f(dj.tensor(_inputs(i, k))).numpy()

    _run_threads(work)
    assert f.cache_size == 1
    for key, value in expected.items():
        np.testing.assert_array_equal(got[key], value, err_msg=str(key))


def test_jit_first_calls_in_many_threads_trace_independently():
    @dj.jit
    def f(a):
        return (a * a + 1.0).sum()

    results = {}

    def work(i):
        n = 3 + i % 4  # four shapes traced concurrently
        for _ in range(5):
            results[i] = f(dj.ones(n)).item()

    _run_threads(work)
    assert results == {i: 2.0 * (3 + i % 4) for i in range(N_THREADS)}
    assert f.cache_size == 4


def test_no_grad_in_one_thread_does_not_affect_another():
    inside = threading.Event()
    checked = threading.Event()
    seen = {}

    def holder(i):
        if i == 0:
            with dj.no_grad():
                inside.set()
                checked.wait(10)
                seen["holder"] = dj.is_grad_enabled()
        else:
            inside.wait(10)
            w = dj.ones(3, requires_grad=True)
            seen["other"] = dj.is_grad_enabled()
            seen["other_requires"] = (w * 2.0).requires_grad
            checked.set()

    _run_threads(holder, 2)
    assert seen == {"holder": False, "other": True, "other_requires": True}
    assert dj.is_grad_enabled()


def test_new_thread_starts_with_grad_enabled():
    seen = []
    with dj.no_grad():
        t = threading.Thread(target=lambda: seen.append(dj.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_default_graph_in_one_thread_leaves_other_threads_eager():
    inside = threading.Event()
    checked = threading.Event()
    seen = {}

    def work(i):
        if i == 0:
            with dj.Graph() as g:
                inside.set()
                checked.wait(10)
                seen["symbolic_here"] = (dj.ones(2) * 2.0)._node is not None
                seen["default"] = dj.get_default_graph() is g
        else:
            inside.wait(10)
            y = dj.ones(2) * 2.0
            seen["other_eager"] = y._node is None and y.tolist() == [2.0, 2.0]
            seen["other_default"] = dj.get_default_graph()
            checked.set()

    _run_threads(work, 2)
    assert seen == {"symbolic_here": True, "default": True, "other_eager": True,
                    "other_default": None}


def test_eager_backward_in_many_threads():
    def step(i):
        w = dj.tensor(np.arange(6.0).reshape(2, 3) + i, requires_grad=True)
        loss = (dj.tanh(w) * w).sum()
        loss.backward()
        return w.grad.numpy()

    expected = {i: step(i) for i in range(N_THREADS)}
    got = {}

    def work(i):
        for _ in range(20):
            got[i] = step(i)
            if i % 2:
                with dj.no_grad():
                    assert not (dj.ones(2, requires_grad=True) * 2.0).requires_grad

    _run_threads(work)
    for i in expected:
        np.testing.assert_array_equal(got[i], expected[i])


def test_jitted_function_gradients_in_many_threads():
    @dj.jit
    def f(w):
        return (dj.tanh(w * 2.0) * w).sum()

    def grad_of(i):
        w = dj.tensor(_inputs(i, 0)[:4, :5], requires_grad=True)
        f(w).backward()
        return w.grad.numpy()

    expected = {i: grad_of(i) for i in range(N_THREADS)}
    got = {}

    def work(i):
        for _ in range(15):
            got[i] = grad_of(i)

    _run_threads(work)
    for i in expected:
        np.testing.assert_array_equal(got[i], expected[i])
