"""Differential, property-based: random graphs of op-table ops give the same values and gradients
eagerly and in a Session at optimize=0, 1 and 2 (broadcasting, reductions, indexing, cond)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dongjing as dj

UNARY = ["tanh", "sigmoid", "relu", "neg", "abs", "exp_small", "log1", "sqrt1", "square",
         "cube", "times_one", "plus_zero", "double_neg", "double_t", "reshape_back", "cast_back"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "where"]
REDUCE = ["sum", "mean", "amax", "sum_keep"]
INDEX = ["first", "slice", "take"]


def _unary(name, a):
    if name == "exp_small":
        return dj.exp(dj.tanh(a))
    if name == "log1":
        return dj.log(dj.abs(a) + 1.0)
    if name == "sqrt1":
        return dj.sqrt(a * a + 1.0)
    if name == "square":
        return a ** 2
    if name == "cube":
        return a ** 3 * 0.1
    if name == "times_one":
        return a * 1.0
    if name == "plus_zero":
        return 0.0 + a
    if name == "double_neg":
        return dj.neg(dj.neg(a))
    if name == "double_t":
        return dj.transpose(dj.transpose(a, -2, -1), -2, -1) if a.ndim >= 2 else a
    if name == "reshape_back":
        return dj.reshape(dj.reshape(a, (-1,)), a.shape) if a.ndim else a
    if name == "cast_back":
        return dj.ops.cast(dj.ops.cast(a, dj.float64), a.dtype)
    return getattr(dj, name)(a)


def _binary(name, a, b):
    if name == "div":
        return a / (dj.abs(b) + 1.0)
    if name == "where":
        return dj.where(a > b, a, b * 0.5)
    return getattr(dj, name)(a, b)


def _reduce(name, a, axis):
    if a.ndim == 0:
        return a
    dim = axis % a.ndim
    if name == "sum_keep":
        return dj.sum(a, dim=dim, keepdim=True)
    return getattr(dj, name)(a) if name == "amax" else getattr(dj, name)(a, dim=dim)


def _index(name, a, k):
    if a.ndim == 0 or a.shape[0] < 2:
        return a
    if name == "first":
        return a[k % a.shape[0]]
    if name == "slice":
        return a[1:]
    return a[dj.tensor(np.array([k % a.shape[0], 0], np.int64))]


def _broadcastable(a, b) -> bool:
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        return False
    return True


def build(program, inputs, with_cond):
    """Interpret `program` (a list of instructions) on `inputs` (eager or symbolic tensors)."""
    values = list(inputs)
    for kind, name, i, j, k in program:
        a = values[i % len(values)]
        b = values[j % len(values)]
        if kind == "unary":
            out = _unary(name, a)
        elif kind == "binary" and _broadcastable(a, b):
            out = _binary(name, a, b)
        elif kind == "reduce":
            out = _reduce(name, a, k)
        elif kind == "index":
            out = _index(name, a, k)
        elif kind == "matmul" and a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[1]:
            out = dj.matmul(a, dj.transpose(b, -2, -1))
        else:
            out = _unary("tanh", a)
        values.append(out)
    total = dj.sum(values[-1])
    for v in values[len(inputs):-1]:
        total = total + dj.mean(v) * 0.5
    if with_cond:
        total = dj.cond(total > 0, lambda: total * 2.0, lambda: total - dj.sum(inputs[0]))
    return total


shapes = st.sampled_from([(3,), (2, 3), (3, 1), (1, 3), (4, 3), ()])
instruction = st.one_of(
    st.tuples(st.just("unary"), st.sampled_from(UNARY), st.integers(0, 9), st.just(0),
              st.just(0)),
    st.tuples(st.just("binary"), st.sampled_from(BINARY), st.integers(0, 9), st.integers(0, 9),
              st.just(0)),
    st.tuples(st.just("reduce"), st.sampled_from(REDUCE), st.integers(0, 9), st.just(0),
              st.integers(0, 3)),
    st.tuples(st.just("index"), st.sampled_from(INDEX), st.integers(0, 9), st.just(0),
              st.integers(0, 3)),
    st.tuples(st.just("matmul"), st.just("matmul"), st.integers(0, 9), st.integers(0, 9),
              st.just(0)),
)


CASES = dict(
    input_shapes=st.lists(shapes, min_size=1, max_size=3),
    program=st.lists(instruction, min_size=1, max_size=8),
    dtype=st.sampled_from([np.float32, np.float64]),
    with_cond=st.booleans(),
    seed=st.integers(0, 2**16),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CASES)
def test_random_graphs_agree_eager_and_at_every_level(input_shapes, program, dtype, with_cond,
                                                      seed):
    _check(input_shapes, program, dtype, with_cond, seed)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CASES)
def test_random_graphs_agree_with_fusion_and_threads_forced(input_shapes, program, dtype,
                                                            with_cond, seed):
    # every group fuses, every large call splits
    with dj.compiler.options(fusion_min_size=1, parallel_min_size=4):
        _check(input_shapes, program, dtype, with_cond, seed)


def _check(input_shapes, program, dtype, with_cond, seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-2, 2, s).astype(dtype) for s in input_shapes]
    eager_inputs = [dj.tensor(a, requires_grad=True) for a in arrays]
    eager = build(program, eager_inputs, with_cond)
    eager_grads = dj.grad(eager, eager_inputs, allow_unused=True)
    rtol, atol = (2e-4, 1e-5) if dtype == np.float32 else (1e-9, 1e-12)

    g = dj.Graph()
    with g.as_default():
        xs = [dj.placeholder(a.shape, dj.dtypes.as_dtype(dtype), name=f"x{i}")
              for i, a in enumerate(arrays)]
        total = build(program, xs, with_cond)
        grads = dj.gradients(total, xs)
    feed = dict(zip(xs, arrays))
    for level in (0, 1, 2):
        wanted = [total] + [gr for gr in grads if gr is not None]
        got = dj.Session(g, optimize=level).run(wanted, feed)
        np.testing.assert_allclose(got[0], eager.numpy(), rtol=rtol, atol=atol)
        expected = [e for e, gr in zip(eager_grads, grads) if gr is not None]
        for value, e in zip(got[1:], expected):
            e = np.zeros_like(value) if e is None else e.numpy()
            np.testing.assert_allclose(value, e, rtol=rtol, atol=atol)
