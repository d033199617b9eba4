"""float32 tanh inside a fused kernel (through its vectorizable formulation) stays within
float32 rounding of np.tanh over the whole range, signed zeros, infinities and NaN."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.compiler import build_program
from dongjing.cpu_kernels import kernels

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba is not installed")


@pytest.fixture(autouse=True)
def formulas_always(monkeypatch):
    """Fused whatever this machine's measurement says (formula_cost decides per machine)."""
    with dj.compiler.options(kernel_formulas="always"):
        yield


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in float32 steps (+0 and -0 one apart; NaN against NaN 0)."""
    ia, ib = (x.view(np.int32).astype(np.int64) for x in (a, b))
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)  # monotone integer order
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.where(np.isnan(a) & np.isnan(b), 0, np.abs(ia - ib))


def test_fused_tanh_is_within_one_ulp(monkeypatch) -> None:
    dj.compiler.set_options(fusion_min_size=1)  # restored by the fixture's context manager
    rng = np.random.default_rng(0)
    xs = np.concatenate([
        np.linspace(-12, 12, 40_001), rng.standard_normal(20_000) * 4,
        np.geomspace(1e-38, 1.0, 20_001), [0.0, np.inf, np.nan, 1e-45, 5e-5, 1e-4, 9.99, 10.0],
    ]).astype(np.float32)
    xs = np.concatenate([xs, -xs])
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(xs.shape, dj.float32, name="x")
        y = dj.tanh(x * 2.0) * 0.5  # a group: mul, tanh, mul (by powers of 2: exact)
    program = build_program(g, [y.node], [x.node], 2)
    assert [n.op.name for n in program.graph.nodes].count("tanh") == 0
    (out,) = program([xs])
    x2 = xs * np.float32(2)
    exact = np.tanh(x2.astype(np.float64)).astype(np.float32) * np.float32(0.5)
    assert _ulps(out, exact).max() <= 1
    assert _ulps(out, np.tanh(x2) * np.float32(0.5)).max() <= 1
    assert np.isnan(out[np.isnan(xs)]).all()
    assert np.signbit(out[xs == 0]).tolist() == np.signbit(xs[xs == 0]).tolist()
