"""Fast forms give NumPy's one-call results bit for bit: fold2d compiled per plane (its sums,
for strides, paddings and kernel sizes that overlap, tile or skip, in both float dtypes);
unfold2d, max_pool2d and its gradient on two halves of the batch (pad values; first largest
values, NaN and -inf windows, padding, -0.0 where g is negative, gradient flags taken over the
whole batch); relu and its gradient on two halves of large arrays."""

from __future__ import annotations

import numpy as np
import pytest

from dongjing.cpu_kernels import kernels, parallel
from dongjing.ops import fold_kernel
from dongjing.ops.nn import _unfold_out, fold_strided, unfold_strided
from dongjing.ops.pooling import (
    _max_pool_backward_forward,
    _max_pool_forward,
    max_pool_backward_strided,
    max_pool_strided,
)


def _out_size(h, w, kernel, stride, padding):
    return ((h + 2 * padding[0] - kernel[0]) // stride[0] + 1,
            (w + 2 * padding[1] - kernel[1]) // stride[1] + 1)


@pytest.mark.skipif(not kernels.available(), reason="needs numba")
@pytest.mark.parametrize("n,c,h,w,kernel,stride,padding", [
    (4, 3, 9, 9, (3, 3), (1, 1), (0, 0)),  # overlapping windows
    (2, 3, 7, 9, (3, 3), (2, 2), (1, 1)),  # strided and padded
    (3, 2, 8, 8, (2, 2), (2, 2), (0, 0)),  # tiling
    (2, 2, 6, 7, (4, 2), (3, 1), (2, 1)),  # uneven, stride skipping rows
    (1, 1, 5, 5, (3, 3), (1, 1), (1, 1)),
    (40, 40, 30, 30, (3, 3), (1, 1), (1, 1)),  # large enough for two threads
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_per_plane_fold_equals_numpy(n, c, h, w, kernel, stride, padding, dtype):
    oh, ow = _out_size(h, w, kernel, stride, padding)
    cols = np.random.default_rng(0).standard_normal((n, c, *kernel, oh, ow)).astype(dtype)
    got = fold_kernel.fold_planes(np, cols, (h, w), kernel, stride, padding)
    assert got is not None and got.flags.c_contiguous
    np.testing.assert_array_equal(got, fold_strided(np, cols, (h, w), kernel, stride, padding))


def test_other_columns_go_to_numpy():
    cols = np.ones((1, 1, 2, 2, 3, 3), np.float32)
    assert fold_kernel.fold_planes(np, cols[..., ::-1], (4, 4), (2, 2), (1, 1),
                                      (0, 0)) is None
    assert fold_kernel.fold_planes(np, cols.astype(np.int64), (4, 4), (2, 2), (1, 1),
                                      (0, 0)) is None


@pytest.fixture
def two_threads(monkeypatch):
    """Two threads allowed whatever OMP_NUM_THREADS says; gives the list of split calls made."""
    calls = []
    real = parallel.split_leading

    def spy(fn, n, args, is_split):
        calls.append(fn.__name__)
        return real(fn, n, args, is_split)

    monkeypatch.setattr(parallel, "threads", lambda: 2)
    monkeypatch.setattr(parallel, "split_leading", spy)
    return calls


@pytest.mark.parametrize("kernel,stride,padding", [((3, 3), (1, 1), (0, 0)),
                                                   ((3, 3), (2, 2), (1, 1))])
@pytest.mark.parametrize("pad_value", [0.0, -np.inf])
def test_unfold_on_two_threads_equals_one_call(two_threads, kernel, stride, padding,
                                               pad_value):
    x = np.random.default_rng(1).standard_normal((9, 16, 64, 64)).astype(np.float32)
    oh, ow = _out_size(64, 64, kernel, stride, padding)
    got = np.full((9, 16, *kernel, oh, ow), 7.0, np.float32)  # every element must be written
    _unfold_out(np, x, got, kernel, stride, padding, pad_value)
    assert two_threads == ["unfold_strided"]
    want = unfold_strided(np, x, np.empty_like(got), kernel, stride, padding, pad_value)
    np.testing.assert_array_equal(got, want)


def _pool_case(two_threads, kernel, stride, padding):
    rng = np.random.default_rng(2)
    x = rng.integers(-3, 3, (8, 32, 64, 64)).astype(np.float32)  # ties in most windows
    x.reshape(-1)[::17] = -np.inf
    x[0, 0, :kernel[0], :kernel[1]] = -np.inf  # a window of -inf values only
    x[0].reshape(-1)[5::97] = np.nan  # NaN maxima in the first image only
    pooled = _max_pool_forward(np, x, kernel, stride, padding)
    assert two_threads == ["max_pool_strided"]
    np.testing.assert_array_equal(
        pooled, max_pool_strided(np, x, kernel, stride, padding, np.empty_like(pooled)))
    two_threads.clear()
    g = rng.standard_normal(pooled.shape).astype(np.float32)  # negative g: -0.0 where missed
    return g, x, pooled


@pytest.mark.parametrize("kernel,stride,padding", [((2, 2), (2, 2), (0, 0)),
                                                   ((3, 3), (2, 2), (1, 1)),
                                                   ((2, 3), (3, 4), (1, 1))])
@pytest.mark.parametrize("finite_g", [True, False])
def test_pool_gradient_on_two_threads_equals_one_call(two_threads, kernel, stride, padding,
                                                      finite_g, monkeypatch):
    from dongjing.ops import pooling

    g, x, pooled = _pool_case(two_threads, kernel, stride, padding)
    if not finite_g:
        g[0].reshape(-1)[3] = np.inf  # in the first half only: the second decides alike
    want = max_pool_backward_strided(np, g, x, pooled, kernel, stride, padding)
    real = pooling.max_pool_backward_planes
    if kernels.available() and real(np, g, x, pooled, kernel, stride, padding,
                                     pooling._gradient_flags(np, g, pooled)) is not None:
        halves = []  # the compiled per-plane form, its planes split over two threads
        monkeypatch.setattr(parallel, "halves",
                            lambda part, n, _real=parallel.halves: halves.append(n) or
                            _real(part, n))
        got = _max_pool_backward_forward(np, g, x, pooled, kernel, stride, padding)
        assert halves == [x.shape[0] * x.shape[1]] and two_threads == []
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    monkeypatch.setattr(pooling, "max_pool_backward_planes", lambda *a: None)  # NumPy's form
    got = _max_pool_backward_forward(np, g, x, pooled, kernel, stride, padding)
    assert two_threads == ["max_pool_backward_strided"]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_small_work_stays_on_one_thread(two_threads):
    x = np.ones((2, 1, 6, 6), np.float32)
    _unfold_out(np, x, np.empty((2, 1, 2, 2, 5, 5), np.float32), (2, 2), (1, 1), (0, 0))
    assert two_threads == []


def test_relu_and_its_gradient_on_two_threads_equal_one_call(monkeypatch):
    from dongjing.ops import elementwise

    calls = []
    real = parallel.split_ufunc
    monkeypatch.setattr(parallel, "threads", lambda: 2)
    monkeypatch.setattr(parallel, "split_ufunc",
                        lambda fn, out, *a: calls.append(fn.__name__) or real(fn, out, *a))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 8, 200, 200)).astype(np.float32)
    x.reshape(-1)[::101] = np.nan
    x.reshape(-1)[1::101] = -0.0
    g = rng.standard_normal(x.shape).astype(np.float32)
    y = elementwise._relu_forward(np, x)
    dx = elementwise._relu_backward_forward(np, g, x)
    assert calls == ["_relu_into", "_relu_backward_into"]
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    np.testing.assert_array_equal(np.signbit(y), np.signbit(np.maximum(x, 0)))
    np.testing.assert_array_equal(dx, np.where(x <= 0, np.float32(0), g))
    np.testing.assert_array_equal(np.signbit(dx), np.signbit(np.where(x <= 0, np.float32(0), g)))
    small = x[0, 0, :10]
    np.testing.assert_array_equal(elementwise._relu_forward(np, small), np.maximum(small, 0))
    assert len(calls) == 2  # small, or non-contiguous, or mixed dtypes: one call
    elementwise._relu_forward(np, x.transpose(0, 1, 3, 2))
    elementwise._relu_backward_forward(np, g.astype(np.float64), x)
    assert len(calls) == 2
