"""Defects the differential fuzzer found against PyTorch (issue 30), each as a hand-written case
with PyTorch's answer written out (so it runs without torch), in eager mode and in a graph."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj

INF, NAN = np.inf, np.nan


def _grads(fn, *values):
    """fn's value and the gradients of its sum, eagerly and from a graph at O2 (equal)."""
    xs = [dj.tensor(np.array(v, np.float64), requires_grad=True) for v in values]
    out = fn(*xs)
    dj.sum(out).backward()
    eager = [out.numpy()] + [x.grad.numpy() for x in xs]
    with dj.Graph() as g:
        phs = [dj.placeholder(np.shape(v), dj.float64) for v in values]
        sym = fn(*phs)
        grads = dj.gradients(dj.sum(sym), phs)
    graph = dj.Session(g, optimize=2).run([sym] + list(grads),
                                          {p: np.array(v, np.float64) for p, v in
                                           zip(phs, values)})
    for e, s in zip(eager, graph):
        np.testing.assert_array_equal(e, s)
    return eager


def test_logaddexp_gradient_of_an_infinite_input_is_one():
    # seed 5, program 155: exp(inf - inf) made it NaN; PyTorch: 0 and 1
    out, ga, gb = _grads(dj.logaddexp, [2.0, INF, 3.0, 1.0], [INF, 2.0, 3.0, -INF])
    np.testing.assert_array_equal(out, [INF, INF, np.logaddexp(3.0, 3.0), 1.0])
    np.testing.assert_array_equal(ga, [0.0, 1.0, 0.5, 1.0])
    np.testing.assert_array_equal(gb, [1.0, 0.0, 0.5, 0.0])


@pytest.mark.parametrize("fn,winner", [(dj.maximum, [1.0, 0.0]), (dj.minimum, [0.0, 1.0])])
def test_maximum_and_minimum_give_a_nan_both_gradients(fn, winner):
    # seed 5, programs 445/464/557: the input facing a NaN got 0; PyTorch gives both sides the
    # whole gradient where either is NaN, half each at ties
    a, b = [NAN, 1.0, 2.0, 1.0, 2.0], [1.0, NAN, 2.0, 0.0, 3.0]
    _, ga, gb = _grads(fn, a, b)
    np.testing.assert_array_equal(ga, [1.0, 1.0, 0.5, winner[0], winner[1]])
    np.testing.assert_array_equal(gb, [1.0, 1.0, 0.5, winner[1], winner[0]])


def test_prod_over_a_dim_of_one_passes_the_gradient_through():
    # seed 5, programs 71/130: out / x = inf / inf made it NaN; PyTorch: 1 (one factor)
    x = [[INF, 2.0, NAN, 0.0]]
    _, g = _grads(lambda t: dj.prod(t, dim=0), x)
    np.testing.assert_array_equal(g, [[1.0, 1.0, 1.0, 1.0]])
    _, g = _grads(lambda t: dj.prod(t), [INF])  # PyTorch's full-reduction rule divides: NaN;
    np.testing.assert_array_equal(g, [1.0])  # one factor's derivative is 1, as its dim rule says
    _, g = _grads(lambda t: dj.prod(t, dim=1), [[INF, 2.0]])  # two factors: PyTorch's NaN
    np.testing.assert_array_equal(g, [[NAN, INF]])


def test_relu_gradient_is_zero_below_zero_even_for_an_infinite_gradient():
    # seed 7, program 131: g * (x > 0) gave inf * 0 = NaN; PyTorch's threshold_backward gives 0
    # where x <= 0 and passes the gradient at NaN
    _, g = _grads(lambda x: dj.div(dj.tensor(np.array([1.0, 1.0, 1.0, 1.0])), dj.relu(x)),
                  [-0.5, 0.0, 2.0, NAN])
    np.testing.assert_array_equal(g, [0.0, 0.0, -0.25, NAN])
    _, g = _grads(dj.relu, [-1.0, NAN, 3.0])
    np.testing.assert_array_equal(g, [0.0, 1.0, 1.0])
    assert not np.signbit(g[0])  # +0, as PyTorch (not g * 0 = -0 for a negative g)


def test_cat_of_mixed_dtypes_gives_each_input_a_gradient_of_its_own_dtype():
    # seed 11, nan mode, program 21: dj.grad gave a float32 input of cat a float64 gradient
    # (backward() cast it when accumulating, so the two disagreed); PyTorch: float32
    a = dj.tensor(np.ones((3, 1), np.float32), requires_grad=True)
    b = dj.tensor(np.ones((3, 2)), requires_grad=True)
    ga, gb = dj.grad(dj.sum(dj.cat([a, b], 1) * 2.0), [a, b])
    assert (ga.dtype, gb.dtype) == (dj.float32, dj.float64)
    np.testing.assert_array_equal(ga.numpy(), np.full((3, 1), 2.0, np.float32))
    with dj.Graph() as g:
        pa, pb = dj.placeholder((None, 1), dj.float32), dj.placeholder((3, None), dj.float64)
        sa, sb = dj.gradients(dj.sum(dj.cat([pa, pb], 1)), [pa, pb])
    got = dj.Session(g, optimize=2).run([sa, sb], {pa: np.ones((3, 1), np.float32),
                                                    pb: np.ones((3, 2))})
    assert [v.dtype for v in got] == [np.float32, np.float64]
