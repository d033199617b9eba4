"""The eager buffer pool (backends/buffer_pool.py): reuse without a setting, never while a
user-visible array still reaches a buffer, bounded, and the same answers as unpooled NumPy."""

import gc

import numpy as np
import pytest

import dongjing as dj
from dongjing.backends import buffer_pool
from dongjing.errors import DongjingError, ShapeError

N = 40_000  # float32: 160 KB, above the pool's 128 KiB threshold


@pytest.fixture
def fresh_pool(monkeypatch):
    """A pool of this test's own, so counters and limits start clean."""
    pool = buffer_pool.BufferPool()
    monkeypatch.setattr(buffer_pool, "pool", pool)
    import dongjing.autograd.engine as engine
    import dongjing.dispatch as dispatch

    monkeypatch.setattr(dispatch, "_pool", pool)
    monkeypatch.setattr(engine, "_pool", pool)
    return pool


def _big(seed=0, requires_grad=False):
    data = np.random.default_rng(seed).standard_normal(N).astype(np.float32)
    return dj.tensor(data, requires_grad=requires_grad)


def _gelu_step(x):
    x.grad = None
    y = 0.5 * x * (1 + dj.tanh(0.7978845608 * (x + 0.044715 * x**3)))
    y.sum().backward()
    return x.grad


def test_results_come_from_the_pool_and_are_reused(fresh_pool):
    x = _big(requires_grad=True)
    for _ in range(3):
        _gelu_step(x)
    first = fresh_pool.stats()
    assert first["misses"] > 0 and first["reserved_bytes"] > 0
    for _ in range(5):
        _gelu_step(x)
    later = fresh_pool.stats()
    assert later["misses"] == first["misses"]  # nothing new allocated: every result reused
    assert later["hits"] > first["hits"]


def test_numpy_views_and_slices_are_never_overwritten(fresh_pool):
    x = _big()
    y = x * 2.0
    held = y.numpy()
    view = y[10:20].numpy()
    window = memoryview(y.numpy())
    expected = held.copy()
    del y
    gc.collect()
    for k in range(10):  # same-sized results: each would take a free buffer if one were free
        z = x * float(k) + 1.0
        del z
    assert np.array_equal(held, expected)
    assert np.array_equal(view, expected[10:20])
    assert np.array_equal(np.frombuffer(window, dtype=np.float32), expected)


def test_tensors_saved_for_backward_are_not_reused(fresh_pool):
    raw = np.random.default_rng(1).standard_normal(N).astype(np.float32)
    x = dj.tensor(raw, requires_grad=True)
    y = dj.tanh(x)  # its output is saved for the gradient
    out = (y * 3.0).sum()
    for _ in range(5):  # churn the pool between forward and backward
        (x * 0.5 + 2.0).detach()
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * (1 - np.tanh(raw) ** 2), rtol=1e-5)


def test_in_place_writes_on_a_pooled_result(fresh_pool):
    x = _big()
    y = x * 2.0
    y.add_(1.0)
    w = x * 5.0  # must not land in y's buffer
    np.testing.assert_allclose(y.numpy(), x.numpy() * 2.0 + 1.0, rtol=1e-6)
    np.testing.assert_allclose(w.numpy(), x.numpy() * 5.0, rtol=1e-6)


@pytest.mark.parametrize("exponent", [0, 1, 2, 3, 0.5, -1, 2.5])
def test_pooled_powers_match_numpy(fresh_pool, exponent):
    x = dj.tensor(np.abs(_big().numpy()) + 0.5)
    got = (x ** exponent).numpy()
    np.testing.assert_allclose(got, x.numpy().astype(np.float64) ** exponent, rtol=1e-5)


def test_pooled_against_unpooled(fresh_pool):
    """Differential: every pooled op (forward and backward) agrees with pooling off."""
    def run():
        a = _big(2, requires_grad=True)
        b = dj.tensor(np.random.default_rng(3).standard_normal((1, N)).astype(np.float32))
        c = dj.tensor(np.float32(1.5))
        out = dj.relu(a - c) * dj.exp(a / 4.0) + dj.tanh(a) / (c + 1.0) + a * a
        out = (out.reshape(1, N) + b).sum() + (dj.sigmoid(a) * a).sum()
        out.backward()
        return out.numpy(), a.grad.numpy()

    pooled = run()
    assert fresh_pool.stats()["hits"] + fresh_pool.stats()["misses"] > 0
    fresh_pool.limit = 0
    fresh_pool.empty_cache()
    hits = fresh_pool.stats()["hits"]
    unpooled = run()
    assert fresh_pool.stats()["hits"] == hits and fresh_pool.stats()["unpooled"] > 0
    np.testing.assert_allclose(pooled[0], unpooled[0], rtol=1e-6)
    np.testing.assert_array_equal(pooled[1], unpooled[1])


def test_bad_broadcast_is_still_a_dongjing_error(fresh_pool):
    with pytest.raises(ShapeError, match="add"):
        _big() + dj.ones(3)


def test_no_growth_over_many_steps(fresh_pool):
    x = _big(requires_grad=True)
    for _ in range(10):
        _gelu_step(x)
    reserved = fresh_pool.stats()["reserved_bytes"]
    for _ in range(300):
        _gelu_step(x)
    stats = fresh_pool.stats()
    assert stats["reserved_bytes"] == reserved
    assert stats["active_bytes"] == buffer_pool._size_class(4 * N)  # x.grad only
    assert stats["unpooled"] == 0


def test_limit_bounds_what_is_kept(fresh_pool):
    fresh_pool.limit = 3 * 160 * 1024
    x = _big(requires_grad=True)
    for _ in range(20):
        grad = _gelu_step(x)
    stats = fresh_pool.stats()
    assert stats["reserved_bytes"] <= fresh_pool.limit
    assert stats["unpooled"] > 0
    np.testing.assert_allclose(grad.numpy(), _gelu_step(x).numpy())


def test_empty_cache_releases_only_free_buffers(fresh_pool):
    x = _big()
    kept = x * 2.0
    for _ in range(3):
        (x * 3.0 + 1.0).detach()
    before = fresh_pool.stats()
    assert before["inactive_bytes"] > 0
    fresh_pool.empty_cache()
    after = fresh_pool.stats()
    assert after["inactive_bytes"] == 0
    assert after["active_bytes"] == before["active_bytes"] > 0
    np.testing.assert_allclose(kept.numpy(), x.numpy() * 2.0)


def test_public_functions():
    stats = dj.memory_stats()
    assert {"reserved_bytes", "active_bytes", "inactive_bytes", "hits", "misses"} <= set(stats)
    dj.empty_cache()
    assert dj.memory_stats()["inactive_bytes"] == 0
    limit = stats["limit_bytes"]
    try:
        dj.set_memory_cache_limit(0)
        assert dj.memory_stats()["limit_bytes"] == 0
    finally:
        dj.set_memory_cache_limit(limit)
    with pytest.raises(DongjingError, match="set_memory_cache_limit"):
        dj.set_memory_cache_limit(-1)


def test_large_pooled_results_split_over_two_threads_equal_one_thread(fresh_pool, monkeypatch,
                                                                      compiler_options):
    from dongjing.cpu_kernels import parallel

    monkeypatch.setattr(parallel, "NUMPY_MIN_SIZE", 1024)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    calls = []
    real = parallel.split_ufunc
    monkeypatch.setattr(parallel, "split_ufunc", lambda *a: calls.append(a[0]) or real(*a))
    raw = np.random.default_rng(4).standard_normal((8, N // 8)).astype(np.float32)

    def run():
        x = dj.tensor(raw, requires_grad=True)
        y = dj.relu(x * 3.0 - 1.0) + dj.tanh(x)
        y.sum().backward()
        return y.numpy().copy(), x.grad.numpy().copy()

    split = run()
    if parallel.threads() > 1:
        assert calls, "no pooled call was split"
    compiler_options(threads=1)
    calls.clear()
    single = run()
    assert not calls
    for a, b in zip(split, single):
        assert a.tobytes() == b.tobytes()
