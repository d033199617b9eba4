"""Defects the differential fuzzer found against PyTorch (issue 30), each as a hand-written case
with PyTorch's answer written out (so it runs without torch), in eager mode and in a graph."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj

INF, NAN = np.inf, np.nan


def _grads(fn, *values):
    """fn's value and the gradients of its sum, eagerly and from a graph at O2 (equal); inf *
    0 and the like are what these cases test, so NumPy's warnings about them are off."""
    with np.errstate(all="ignore"):
        return _grads_quietly(fn, *values)


def _grads_quietly(fn, *values):
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


@pytest.mark.parametrize("fn", [dj.maximum, dj.minimum])
def test_maximum_and_minimum_keep_an_infinite_gradient_from_the_input_that_lost(fn):
    # seed 101, programs 410/488: g * 0 gave NaN to the losing input where g was inf or NaN (a
    # log_softmax of a NaN row upstream); PyTorch fills +0 there (masked_fill)
    def f(a, b):
        return fn(a, b) * dj.tensor(np.array([INF, NAN, -INF, 2.0]))

    _, ga, gb = _grads(f, [1.0, 5.0, -2.0, 3.0], [3.0, 0.0, -1.0, 3.0])
    if fn is dj.maximum:  # b wins at 0 and 2, a at 1, a tie at 3 (half each)
        want_a, want_b = [0.0, NAN, 0.0, 1.0], [INF, 0.0, -INF, 1.0]
    else:
        want_a, want_b = [INF, 0.0, -INF, 1.0], [0.0, NAN, 0.0, 1.0]
    np.testing.assert_array_equal(ga, want_a)
    np.testing.assert_array_equal(gb, want_b)
    lost = np.concatenate([ga, gb])[np.concatenate([want_a, want_b]) == 0.0]
    assert lost.size == 3 and not np.signbit(lost).any()  # +0 filled, as PyTorch (not -inf * 0)


def test_prod_gradient_follows_pytorch_with_zeros_and_infinities():
    # seed 5, programs 71/130, and seed 101, programs 930 (default) and 17/457/588/981 (nan):
    # the gradient divided out / x even where the tensor held a zero, so an inf or NaN factor
    # beside it gave NaN; PyTorch: out / x where the tensor holds no zero, else the exact
    # product of the other factors; over all dims with two zeros, 0; a 0-d input passes g on
    _, g = _grads(lambda t: dj.prod(t, dim=0), [[INF, 2.0, NAN, 0.0]])
    np.testing.assert_array_equal(g, [[1.0, 1.0, 1.0, 1.0]])
    _, g = _grads(lambda t: dj.prod(t, dim=1), [[INF, 2.0, -0.0], [1.0, INF, 3.0]])
    np.testing.assert_array_equal(g, [[-0.0, NAN, INF], [INF, 3.0, INF]])
    assert np.signbit(g[0, 0])
    _, g = _grads(lambda t: dj.prod(t, dim=1), [[INF, 2.0], [1.0, 0.0]])
    np.testing.assert_array_equal(g, [[2.0, INF], [0.0, 1.0]])
    _, g = _grads(lambda t: dj.prod(t, dim=0), [[INF, 2.0]])  # no zero: inf / inf, as PyTorch
    np.testing.assert_array_equal(g, [[NAN, 1.0]])
    _, g = _grads(lambda t: dj.prod(t, dim=1), [[INF, 2.0]])
    np.testing.assert_array_equal(g, [[NAN, INF]])
    _, g = _grads(dj.prod, [INF, 2.0, 0.0])
    np.testing.assert_array_equal(g, [0.0, NAN, INF])
    _, g = _grads(dj.prod, [INF, 0.0, 0.0, 2.0])
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0, 0.0])
    _, g = _grads(dj.prod, [INF])
    np.testing.assert_array_equal(g, [NAN])
    _, g = _grads(dj.prod, INF)  # 0-d
    np.testing.assert_array_equal(g, 1.0)
    _, g = _grads(lambda t: dj.prod(t, dim=0), np.zeros((2, 0)))
    assert g.shape == (2, 0)


def test_prod_gradient_with_a_zero_under_unknown_dims():
    # the exact rule (running products and a concatenated 1) on a graph whose dims are unknown,
    # a zero chosen at run time
    with dj.Graph() as g:
        p = dj.placeholder((None, None), dj.float64)
        grad, = dj.gradients(dj.sum(dj.prod(p, dim=1)), [p])
    sess = dj.Session(g, optimize=2)
    np.testing.assert_array_equal(sess.run(grad, {p: np.array([[INF, 2.0], [1.0, 0.0]])}),
                                  [[2.0, INF], [0.0, 1.0]])
    np.testing.assert_array_equal(sess.run(grad, {p: np.array([[INF, 2.0, 3.0]])}),
                                  [[NAN, INF, INF]])
    assert sess.run(grad, {p: np.zeros((3, 0))}).shape == (3, 0)


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


def test_power_zero_has_a_zero_gradient_even_for_an_infinite_gradient():
    # seed 101 (nan mode), program 3: x ** 0 gave g * 0 (NaN where g is NaN, -0 where g < 0);
    # PyTorch: +0 (zeros_like); a tensor exponent of 0 likewise (where exponent == 0: 0)
    w = dj.tensor(np.array([NAN, -1.0, INF, 2.0]))
    _, g = _grads(lambda x: (x ** 0) * w, [0.0, -0.0, 2.0, INF])
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0, 0.0])
    assert not np.signbit(g).any()
    _, g, _ = _grads(lambda x, e: dj.pow(x, e) * w, [0.0, -0.0, 2.0, INF], [0.0, 0.0, 0.0, 2.0])
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0, INF])
