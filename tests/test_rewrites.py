"""Every compiler rewrite is exact: O0 (the plain interpreter), O1 and O2 agree bit for bit on
NaN, inf, -0.0, huge and tiny floats and on large integers, for values and gradients; rules that
are exact still fire."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.cpu_kernels import kernels

_FLOATS = [np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.5, 3e38, -1e-45, 7.25]
_INTS = [0, -1, 7, 2 ** 53 + 1, -(2 ** 53) - 3, 2 ** 62 + 1, 2 ** 63 - 1, -(2 ** 63)]
_LARGE = 1 << 17  # big enough for O2 to fuse


def _cast(x, dtype):
    return dj.ops.cast(x, dtype)


_FLOAT_RULES = {
    "x+0": lambda x: x + 0.0,
    "0+x": lambda x: 0.0 + x,
    "x+-0": lambda x: x + (-0.0),
    "x-0": lambda x: x - 0.0,
    "x--0": lambda x: x - (-0.0),
    "x*1": lambda x: x * 1.0,
    "1*x": lambda x: 1.0 * x,
    "x/1": lambda x: x / 1.0,
    "x*0": lambda x: x * 0.0,
    "0*x": lambda x: 0.0 * x,
    "x*-0": lambda x: x * -0.0,
    "x*0+x": lambda x: x * 0 + x,
    "neg(neg)": lambda x: dj.neg(dj.neg(x)),
    "x**1": lambda x: x ** 1,
    "cast same": lambda x: _cast(x, x.dtype),
    "cast f64 f32": lambda x: _cast(_cast(x, dj.float64), x.dtype),
    "cast f16 back": lambda x: _cast(_cast(x, np.float16), x.dtype),
    "cast i64 back": lambda x: _cast(_cast(x, dj.int64), x.dtype),
    "cast bool back": lambda x: _cast(_cast(x, dj.bool), x.dtype),
    "x*mask": lambda x: x * _cast(x > 0, x.dtype),
    "x*mask64": lambda x: x * _cast(x > 0, dj.float64),
    "stop_gradient": lambda x: dj.stop_gradient(x) + x,
    "transpose2": lambda x: dj.transpose(dj.transpose(dj.reshape(x, (-1, 1)), 0, 1),
                                         0, 1).reshape(-1),
    "full_like signs": lambda x: dj.full_like(x, 0.0) / dj.full_like(x, -0.0),
    "cse 0 -0": lambda x: (x + 0.0) * (x + (-0.0)),
    "max chain": lambda x: dj.maximum(x * 2.0, x) - x * 1.0,
}

_INT_RULES = {
    "x+0": lambda x: x + 0,
    "x*0": lambda x: x * 0,
    "x*1": lambda x: x * 1,
    "neg(neg)": lambda x: dj.neg(dj.neg(x)),
    "cast f64 back": lambda x: _cast(_cast(x, dj.float64), dj.int64),
    "cast f32 back": lambda x: _cast(_cast(x, dj.float32), dj.int64),
    "cast i32 back": lambda x: _cast(_cast(x, dj.int32), dj.int64),
    "cast bool back": lambda x: _cast(_cast(x, dj.bool), dj.int64),
    "x*mask": lambda x: x * _cast(x > 0, dj.int64),
}


def _values(kind, dtype, n):
    base = np.array(_FLOATS if kind == "f" else _INTS, dtype=dtype)
    return np.resize(base, n)


def _run_levels(build, dtype, value, grad: bool):
    with dj.Graph() as g:
        x = dj.placeholder(value.shape, dtype, name="x")
        out = build(x)
        fetches = [out]
        if grad:
            fetches += [d for d in dj.gradients((out * out).sum(), [x]) if d is not None]
    results = []
    with np.errstate(all="ignore"):
        for level in (0, 1, 2):
            results.append(dj.Session(g, optimize=level).run(fetches, {x: value.copy()}))
    return results


def _assert_bitwise(results, what):
    ref = results[0]
    for level, got in enumerate(results[1:], 1):
        for i, (a, b) in enumerate(zip(ref, got)):
            a, b = np.asarray(a), np.asarray(b)
            assert a.dtype == b.dtype and a.shape == b.shape, (what, level, i)
            if a.dtype.kind == "f":  # NaN payloads may differ; NaN-ness and sign bits may not
                assert np.array_equal(np.isnan(a), np.isnan(b)), (what, level, i, a, b)
                a, b = np.where(np.isnan(a), 0, a), np.where(np.isnan(b), 0, b)
                assert np.array_equal(np.signbit(a), np.signbit(b)), (what, level, i, a, b)
            assert a.tobytes() == b.tobytes(), (what, level, i, a, b)


@pytest.mark.parametrize("name", sorted(_FLOAT_RULES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_rewrites_are_bitwise_exact(name, dtype):
    for n in (len(_FLOATS), _LARGE):
        value = _values("f", dtype, n)
        results = _run_levels(_FLOAT_RULES[name], dtype, value, grad=n < _LARGE)
        _assert_bitwise(results, f"{name} {np.dtype(dtype)} n={n}")


@pytest.mark.parametrize("name", sorted(_INT_RULES))
def test_integer_rewrites_are_exact_for_large_integers(name):
    for n in (len(_INTS), _LARGE):
        _assert_bitwise(_run_levels(_INT_RULES[name], np.int64, _values("i", np.int64, n), False),
                        f"{name} n={n}")


def test_x_times_zero_keeps_nan_and_inf():
    with dj.Graph() as g:
        x = dj.placeholder((3,), dj.float32, name="x")
        y = x * 0.0
        (gx,) = dj.gradients((y * x).sum(), [x])
    value = np.array([np.nan, np.inf, -2.0], np.float32)
    with np.errstate(all="ignore"):
        out, grad = dj.Session(g, optimize=2).run([y, gx], {x: value})
    assert np.isnan(out[:2]).all() and out[2] == 0 and np.signbit(out[2])
    assert np.isnan(grad[:2]).all()


def _ops_after(build, dtype=np.float32):
    with dj.Graph() as g:
        x = dj.placeholder((4,), dtype, name="x")
        y = build(x)
    return [n.op.name for n in dj.Session(g, optimize=2).optimized_graph(y).nodes]


def test_exact_rules_still_fire_and_inexact_ones_do_not():
    assert _ops_after(lambda x: x + (-0.0)) == ["placeholder"]
    assert _ops_after(lambda x: (x - 0.0) * 1.0 / 1.0) == ["placeholder"]
    assert "add" in _ops_after(lambda x: x + 0.0)
    assert "mul" in _ops_after(lambda x: x * 0.0)
    assert _ops_after(lambda x: x * 0, np.int64)[-1] == "constant"
    assert _ops_after(lambda x: _cast(_cast(x, dj.float64), np.int32), np.int32) == ["placeholder"]
    assert "cast" in _ops_after(lambda x: _cast(_cast(x, dj.float64), dj.int64), np.int64)


@pytest.mark.parametrize("small, big, exact", [
    (np.int64, np.float64, False), (np.int32, np.float64, True), (np.int32, np.float32, False),
    (np.int16, np.float32, True), (np.uint8, np.float16, True), (np.int16, np.float16, False),
    (np.int32, np.int64, True), (np.uint64, np.int64, False), (np.uint32, np.int64, True),
    (np.float32, np.float64, True), (np.float64, np.float32, False), (np.bool_, np.float16, True),
    (np.float32, np.int64, False),
])
def test_holds_every_value(small, big, exact):
    from dongjing.dtypes import holds_every_value

    assert holds_every_value(small, big) is exact
    if small is not np.bool_ and np.dtype(small).kind in "iu":  # the extremes survive if exact
        info = np.iinfo(small)
        extremes = np.array([info.min, info.max, info.max - 1], small)
        with np.errstate(all="ignore"):
            assert np.array_equal(extremes.astype(big).astype(small), extremes) or not exact


@pytest.mark.skipif(not kernels.available(), reason="numba is not installed")
def test_fused_maximum_and_minimum_keep_numpys_zero_signs(compiler_options, monkeypatch):

    compiler_options(fusion_min_size=1)
    with dj.Graph() as g:
        a = dj.placeholder((4,), dj.float64, name="a")
        b = dj.placeholder((4,), dj.float64, name="b")
        outs = [dj.minimum(a * 1.0, b) + 0.0 * a, dj.maximum(a, b - 0.0) * 1.0]
    feed = {a: np.array([0.0, -0.0, 1.0, -0.0]), b: np.array([-0.0, 0.0, 1.0, -0.0])}
    results = [dj.Session(g, optimize=level).run(outs, dict(feed)) for level in (0, 2)]
    _assert_bitwise(results, "min/max of signed zeros")
