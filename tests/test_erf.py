"""erf to the precision of its dtype (ops/erf_series.py): float64 within a few ulps of
`math.erf`, float32 within 2 ulps of the correctly rounded value, special values as IEEE and
PyTorch give them, and the same in eager, graphs and `dj.jit`."""

import math

import numpy as np
import pytest

import dongjing as dj
from dongjing.ops.erf_series import erf_array

_ERF = np.vectorize(math.erf)


def _points() -> np.ndarray:
    tiny = np.logspace(-300, 1, 2000)
    return np.concatenate([np.linspace(-7.0, 7.0, 20001), tiny, -tiny,
                           [1.0, -1.0, 6.0, -6.0, 5.999999, 1e300, -1e300]])


def test_float64_is_within_a_few_ulps_of_libm():
    x = _points()
    got, want = erf_array(np, x), _ERF(x)
    assert got.dtype == np.float64
    ulps = np.abs(got - want) / np.spacing(np.abs(want))
    assert ulps.max() <= 8


def test_float32_is_within_two_ulps_of_the_rounded_value():
    x = _points()
    x = x[np.abs(x) < 1e30].astype(np.float32)
    got = erf_array(np, x)
    assert got.dtype == np.float32
    want = _ERF(x.astype(np.float64)).astype(np.float32)
    nonzero = want != 0
    ulps = np.abs(got[nonzero].astype(np.float64) - want[nonzero]) / np.spacing(
        np.abs(want[nonzero]))
    assert ulps.max() <= 2
    assert np.array_equal(got[~nonzero], want[~nonzero])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_special_values(dtype):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype=dtype)
    got = erf_array(np, x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got[:4], [0.0, -0.0, 1.0, -1.0])
    assert np.signbit(got[1]) and not np.signbit(got[0])
    assert np.isnan(got[4])
    assert erf_array(np, np.array(0.5, dtype=dtype)).shape == ()


def test_the_op_and_its_gradient_in_every_mode():
    x = np.array([-3.0, -0.4, 0.0, 1e-8, 0.7, 2.5, 8.0])
    t = dj.tensor(x, dtype=dj.float64, requires_grad=True)
    y = dj.erf(t)
    y.sum().backward()
    np.testing.assert_array_equal(y.numpy(), erf_array(np, x))
    np.testing.assert_allclose(t.grad.numpy(), 2 / math.sqrt(math.pi) * np.exp(-x * x),
                               rtol=1e-15)
    g = dj.Graph()
    with g.as_default():
        p = dj.placeholder(dj.float64, [None])
        out = dj.erf(p)
    for level in (0, 1, 2):
        got = dj.Session(g, optimize=level).run(out, {p: x})
        np.testing.assert_array_equal(got, y.numpy())
    np.testing.assert_array_equal(dj.jit(dj.erf)(dj.tensor(x)).numpy(), y.numpy())
    assert dj.autograd.gradcheck(dj.erf, [dj.tensor(x[:6], dtype=dj.float64,
                                                    requires_grad=True)])


def test_equals_pytorch():
    torch = pytest.importorskip("torch")
    x = _points()
    np.testing.assert_allclose(dj.erf(dj.tensor(x)).numpy(),
                               torch.erf(torch.tensor(x)).numpy(), rtol=1e-15, atol=0)
    x32 = x[np.abs(x) < 1e30].astype(np.float32)
    np.testing.assert_allclose(dj.erf(dj.tensor(x32)).numpy(),
                               torch.erf(torch.tensor(x32)).numpy(), rtol=3e-7, atol=0)
    nn_gelu = dj.nn.functional.gelu(dj.tensor(x, dtype=dj.float64)).numpy()
    # 1 + erf(x / sqrt 2) cancels for x << 0 in both frameworks' formula: absolute tolerance
    np.testing.assert_allclose(nn_gelu, torch.nn.functional.gelu(torch.tensor(x)).numpy(),
                               rtol=1e-14, atol=1e-15)
