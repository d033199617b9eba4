"""Momentum SGD's one-pass kernel (optim/fused.py) gives bit for bit what NumPy's four ufunc
calls give, in float32 and float64, and leaves aliasing or strided arrays to NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.cpu_kernels import kernels
from dongjing.optim import fused

pytestmark = pytest.mark.skipif(not kernels.available(), reason="needs numba")


def _train(dtype, use_kernel: bool, monkeypatch):
    if not use_kernel:
        monkeypatch.setitem(fused._sgd_kernels, np.dtype(dtype), None)
    rng = np.random.default_rng(0)
    w = dj.tensor(rng.standard_normal((33, 17)).astype(dtype), requires_grad=True)
    b = dj.tensor(rng.standard_normal(17).astype(dtype), requires_grad=True)
    opt = dj.optim.SGD([w, b], lr=0.037, momentum=0.9)
    x = dj.tensor(rng.standard_normal((8, 33)).astype(dtype))
    for _ in range(4):
        opt.zero_grad()
        (dj.tanh(x @ w + b) ** 2).sum().backward()
        opt.step()
    return w.detach().numpy().copy(), b.detach().numpy().copy(), \
        opt.state[w]["momentum_buffer"].numpy().copy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_kernel_rounds_as_numpy_does(dtype, monkeypatch):
    with_kernel = _train(dtype, True, monkeypatch)
    assert fused._sgd_kernels.get(np.dtype(dtype)) is not None
    monkeypatch.undo()
    without = _train(dtype, False, monkeypatch)
    for a, b in zip(with_kernel, without):
        np.testing.assert_array_equal(a, b)
