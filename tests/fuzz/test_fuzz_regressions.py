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


def _every_mode(fn, *values, dtype=np.float64):
    """fn's value and the gradients of its sum: eagerly, from a graph at O0, O1 and O2 and
    under dj.jit, all equal bit for bit (NaN where NaN); the eager ones are returned."""
    with np.errstate(all="ignore"):
        arrays = [np.array(v, dtype) for v in values]
        xs = [dj.tensor(a, requires_grad=True) for a in arrays]
        out = fn(*xs)
        dj.sum(out).backward()
        eager = [out.numpy()] + [x.grad.numpy() for x in xs]
        with dj.Graph() as g:
            phs = [dj.placeholder(a.shape, a.dtype) for a in arrays]
            sym = fn(*phs)
            fetches = [sym] + list(dj.gradients(dj.sum(sym), phs))
        runs = [dj.Session(g, optimize=level).run(fetches, dict(zip(phs, arrays)))
                for level in (0, 1, 2)]

        @dj.jit
        def jitted(*ts):
            y = fn(*ts)
            return [y] + list(dj.grad(dj.sum(y), list(ts)))

        ts = [dj.tensor(a, requires_grad=True) for a in arrays]
        runs.append([t.numpy() for t in jitted(*ts)])
    for run in runs:
        for e, s in zip(eager, run):
            _same([np.asarray(s)], [e])
    return eager


def _torch_grads(fn, *values, dtype="float64"):
    """The same with PyTorch (values and gradients of the sum), where torch is installed."""
    torch = pytest.importorskip("torch")
    ts = [torch.tensor(np.array(v, dtype), requires_grad=True) for v in values]
    out = fn(torch, *ts)
    grads = torch.autograd.grad(out.sum(), ts)
    return [out.detach().numpy()] + [g.numpy() for g in grads]


def _same(got, want):
    """Equal, NaN where NaN, and zeros and infinities of the same sign (a NaN's sign is
    unspecified)."""
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        g, w = np.asarray(g), np.asarray(w)
        assert np.array_equal(np.signbit(g) & ~np.isnan(g), np.signbit(w) & ~np.isnan(w))


def test_abs_gradient_at_nan_is_zero():
    # seed 2026, program 1618: x - x of an infinite x is NaN, and abs's g * sign(NaN) put NaN
    # into x's gradient; PyTorch's sgn(NaN) is 0 (sign's own forward keeps NaN)
    def f(x):
        d = x - x
        return dj.abs(d) * 3.0 + d

    x = [INF, 1.0, NAN, -2.0, 0.0]
    got = _every_mode(f, x)
    _same(got, [[NAN, 0.0, NAN, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]])
    _same(_every_mode(dj.abs, [NAN, -2.0, 0.0, INF])[1:], [[0.0, -1.0, 0.0, 1.0]])


def test_abs_gradient_at_nan_against_pytorch():
    x = [INF, 1.0, NAN, -2.0, 0.0, -INF]
    want = _torch_grads(lambda m, x: m.abs(x - x) * 3.0 + (x - x), x)
    _same(_every_mode(lambda x: dj.abs(x - x) * 3.0 + (x - x), x), want)


def test_cumprod_gradient_stops_at_the_first_zero():
    # seed 2026, program 2114: log(cumprod(x)) with a zero: 1 / 0 = inf reached the factors
    # before the zero as inf * 0 = NaN; PyTorch sums only the outputs before the first zero
    # there (later ones are exactly 0 in them): (z - i) / x_i, and at z the product before it
    got = _every_mode(lambda x: dj.log(dj.cumprod(x, dim=0)), [2.0, -4.0, 0.5, 0.0])
    _same(got[1:], [[1.5, -0.5, 2.0, INF]])  # out_3 = -4 * 0 = -0.0: g_3 = -inf
    # at the first zero, the outputs before the second zero; after the first zero, nothing
    got = _every_mode(lambda x: dj.log(dj.cumprod(x, dim=0)), [2.0, 0.0, 3.0, 0.0])
    _same(got[1:], [[0.5, INF, 0.0, 0.0]])


def test_cumprod_gradient_with_zeros_against_pytorch():
    rows = [[2.0, -4.0, 0.5, 0.0, 3.0], [0.0, 2.0, 0.0, 1.0, 5.0], [1.5, 2.0, 3.0, -1.0, 2.0]]
    want = _torch_grads(lambda m, x: m.log(m.cumprod(x, 1)) + m.cumprod(x, 1), rows)
    got = _every_mode(lambda x: dj.log(dj.cumprod(x, dim=1)) + dj.cumprod(x, dim=1), rows)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def test_remainder_zero_has_the_dividends_sign():
    # seed 2026, program 3528: NumPy signs a zero remainder as the divisor, PyTorch (fmod's
    # zero) as the dividend; log's gradient 1 / r showed it as infinities of opposite sign
    def f(a, b):
        return dj.log(dj.remainder(a, b))

    a, b = [0.0, -0.0, 3.0, -3.0, 0.0], [-1.5, 1.5, 1.5, -1.5, 2.0]
    out, ga, _ = _every_mode(f, a, b)
    _same([ga], [[INF, -INF, INF, -INF, INF]])
    r = dj.remainder(dj.tensor(np.array(a)), dj.tensor(np.array(b))).numpy()
    _same([r], [[0.0, -0.0, 0.0, -0.0, 0.0]])
    _same([dj.remainder(dj.tensor(np.array([-0.0, 0.0, -4.5])), 1.5).numpy()],
          [[-0.0, 0.0, -0.0]])


def test_remainder_against_pytorch():
    a = [0.0, -0.0, 0.0, -0.0, 3.0, -3.0, 3.0, -3.0, 2.5, -2.5]
    b = [1.5, 1.5, -1.5, -1.5, 1.5, 1.5, -1.5, -1.5, INF, -INF]
    want = _torch_grads(lambda m, a, b: m.remainder(a, b), a, b)
    _same(_every_mode(dj.remainder, a, b)[:1], want[:1])


def test_square_root_power_gradient_at_negative_zero_is_minus_infinity():
    # seed 2026, program 3817: x ** 0.5 + sqrt(x) at -0.0 gave +inf + -inf = NaN; PyTorch's
    # x ** 0.5 is sqrt (x ** -0.5 its rsqrt), so both gradients are -inf there
    got = _every_mode(lambda x: x ** 0.5 + dj.sqrt(x), [-0.0, 0.0, 4.0, -1.0], dtype=np.float32)
    _same(got[1:], [np.array([-INF, INF, 0.5, NAN], np.float32)])


def test_square_root_power_against_pytorch():
    x = [-0.0, 0.0, 4.0, -1.0, INF, 2.0]
    want = _torch_grads(lambda m, x: x ** 0.5 + m.sqrt(x), x, dtype="float32")
    _same(_every_mode(lambda x: x ** 0.5 + dj.sqrt(x), x, dtype=np.float32), want)


_NAN_WINDOWS = [[[[1.0, NAN, 3.0, NAN], [NAN, 5.0, 2.0, 0.0], [4.0, 4.0, NAN, NAN],
                  [0.0, NAN, 2.0, 2.0]]]]


def test_max_pool_gradient_goes_to_a_windows_last_nan():
    # seed 2026 (nan mode), program 3556: PyTorch's kernel takes every NaN it meets (val >
    # max || isnan(val)), so a window's last NaN gets the gradient; dongjing gave it to the first
    import dongjing.nn.functional as F

    got = _every_mode(lambda x: F.max_pool2d(x, 2) * dj.arange(1.0, 5.0).reshape(2, 2),
                      _NAN_WINDOWS)
    _same(got[1:], [[[[[0.0, 0.0, 0.0, 2.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 4.0],
                      [0.0, 3.0, 0.0, 0.0]]]]])
    got = _every_mode(lambda x: F.max_pool2d(x, 2, padding=1), _NAN_WINDOWS)
    _same(got[1:], [[[[[1.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0],
                      [1.0, 1.0, 0.0, 1.0]]]]])


def test_max_pool_gradient_and_its_gradient_against_pytorch():
    torch = pytest.importorskip("torch")
    import dongjing.nn.functional as F

    x, c = np.array(_NAN_WINDOWS), np.arange(16.0).reshape(1, 1, 4, 4) + 1
    for pad in (0, 1):
        tx = torch.tensor(x, requires_grad=True)
        tout = torch.nn.functional.max_pool2d(tx, 2, padding=pad)
        tw = torch.ones(tout.shape, dtype=torch.float64, requires_grad=True)
        tg, = torch.autograd.grad((tout * tw).sum(), tx, create_graph=True)
        tgg, = torch.autograd.grad((tg * torch.tensor(c)).sum(), tw)
        dx = dj.tensor(x, requires_grad=True)
        dout = F.max_pool2d(dx, 2, padding=pad)
        dw = dj.tensor(np.ones(tout.shape), requires_grad=True)
        dg, = dj.grad((dout * dw).sum(), [dx], create_graph=True)
        dgg, = dj.grad((dg * dj.tensor(c)).sum(), [dw])
        _same([dg.numpy(), dgg.numpy()], [tg.detach().numpy(), tgg.numpy()])


_POW_BASES = [-2.0, 0.0, 0.0, 0.0, NAN, 2.0, INF, -0.0]
_POW_EXPONENTS = [2.0, 2.0, 0.0, -1.0, 0.0, 3.0, -1.0, -1.0]


def test_power_gradient_by_the_exponent_is_pytorchs():
    # seed 0, program 6371: a NaN (or negative) base gave 0 instead of PyTorch's NaN;
    # PyTorch: a ** b * log(a), 0 where a == 0 and b >= 0
    _, _, by_exponent = _grads(dj.pow, _POW_BASES, _POW_EXPONENTS)
    np.testing.assert_array_equal(by_exponent, [NAN, 0.0, 0.0, -INF, NAN, 8 * np.log(2.0), NAN,
                                                INF])


def test_power_gradient_by_the_exponent_against_pytorch():
    torch = pytest.importorskip("torch")
    b = torch.tensor(_POW_BASES, dtype=torch.float64)
    e = torch.tensor(_POW_EXPONENTS, dtype=torch.float64, requires_grad=True)
    torch.pow(b, e).sum().backward()
    _, _, by_exponent = _grads(dj.pow, _POW_BASES, _POW_EXPONENTS)
    np.testing.assert_array_equal(by_exponent, e.grad.numpy())
