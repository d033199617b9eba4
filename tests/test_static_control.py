"""dj.cond and dj.while_loop: values, gradients against finite differences, eager behaviour, and
the errors of badly formed control flow."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj

X0 = np.array([0.3, -0.7, 0.5])


def _numeric_grad(sess, out, x, feed, eps=1e-6):
    """Central differences of the scalar `out` w.r.t. the fed float64 placeholder `x`."""
    base = np.array(feed[x], dtype=np.float64)
    grad = np.zeros_like(base)
    for i in np.ndindex(base.shape):
        for sign in (1, -1):
            moved = base.copy()
            moved[i] += sign * eps
            grad[i] += sign * float(sess.run(out, {**feed, x: moved})) / (2 * eps)
    return grad


def _cond_graph():
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((3,), dj.float64, name="x")
        w = dj.Variable(np.array([1.0, -2.0, 0.5]), name="w")
        p = dj.sum(x) > 0
        y = dj.cond(p, lambda: dj.sum(dj.tanh(x * w) * x), lambda: dj.sum(dj.exp(x) * w))
    return g, x, w, y


LEVELS = pytest.mark.parametrize("level", [0, 1, 2], ids=["interpreted", "cleaned", "compiled"])


@LEVELS
@pytest.mark.parametrize("shift", [0.0, -1.0], ids=["true_branch", "false_branch"])
def test_cond_value_and_gradient_match_finite_differences(shift, level):
    g, x, w, y = _cond_graph()
    with g.as_default():
        gx, gw = dj.gradients(y, [x, w])
    sess = dj.Session(g, optimize=level)
    xv = X0 + shift
    value, grad_x, grad_w = sess.run([y, gx, gw], {x: xv})
    wv = w.numpy()
    expected = np.sum(np.tanh(xv * wv) * xv) if xv.sum() > 0 else np.sum(np.exp(xv) * wv)
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    np.testing.assert_allclose(grad_x, _numeric_grad(sess, y, x, {x: xv}), rtol=1e-6,
                               atol=1e-9)
    expected_w = xv * xv * (1 - np.tanh(xv * wv) ** 2) if xv.sum() > 0 else np.exp(xv)
    np.testing.assert_allclose(grad_w, expected_w, rtol=1e-9)


def _bounded_loop(limit, steps=3):
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((3,), dj.float64, name="x")
        w = dj.Variable(np.array([0.2, -0.1, 0.4]), name="w")
        _, v = dj.while_loop(lambda i, v: i < steps,
                             lambda i, v: (i + 1, dj.tanh(v * 1.5 + w) * x),
                             [dj.constant(0), x], maximum_iterations=limit)
        out = dj.sum(v * v)
        gx, gw = dj.gradients(out, [x, w])
    return g, x, w, out, gx, gw


def _loop_by_hand(xv, wv, n):
    v = xv.copy()
    for _ in range(n):
        v = np.tanh(v * 1.5 + wv) * xv
    return np.sum(v * v)


@LEVELS
@pytest.mark.parametrize("limit,runs", [(5, 3), (2, 2)], ids=["cond_stops", "limit_stops"])
def test_bounded_while_loop_gradient_matches_finite_differences(limit, runs, level):
    g, x, w, out, gx, gw = _bounded_loop(limit)
    g.verify()
    sess = dj.Session(g, optimize=level)
    value, grad_x, grad_w = sess.run([out, gx, gw], {x: X0})
    np.testing.assert_allclose(value, _loop_by_hand(X0, w.numpy(), runs), rtol=1e-12)
    np.testing.assert_allclose(grad_x, _numeric_grad(sess, out, x, {x: X0}), rtol=1e-6,
                               atol=1e-9)
    eps, wv = 1e-6, w.numpy()
    numeric_w = [(_loop_by_hand(X0, wv + eps * e, runs) - _loop_by_hand(X0, wv - eps * e, runs))
                 / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(grad_w, numeric_w, rtol=1e-6, atol=1e-9)


@LEVELS
@pytest.mark.parametrize("runs", [0, 1, 4])
def test_unbounded_while_loop_gradient_matches_finite_differences(runs, level):
    g, x, w, out, gx, gw = _bounded_loop(None, steps=runs)  # no maximum_iterations
    sess = dj.Session(g, optimize=level)
    value, grad_x, grad_w = sess.run([out, gx, gw], {x: X0})
    np.testing.assert_allclose(value, _loop_by_hand(X0, w.numpy(), runs), rtol=1e-12)
    np.testing.assert_allclose(grad_x, _numeric_grad(sess, out, x, {x: X0}), rtol=1e-6,
                               atol=1e-9)
    eps, wv = 1e-6, w.numpy()
    numeric_w = [(_loop_by_hand(X0, wv + eps * e, runs) - _loop_by_hand(X0, wv - eps * e, runs))
                 / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(grad_w, numeric_w, rtol=1e-6, atol=1e-9)


def _halve_or_square(i, v):
    return i + 1, dj.cond(v > 1.0, lambda: v * 0.5, lambda: v * v + 0.5)


def test_cond_inside_while_body_with_gradient():
    with dj.Graph() as g:
        x = dj.placeholder((), dj.float64, name="x")
        body = _halve_or_square
        _, y = dj.while_loop(lambda i, v: i < 4, body, [dj.constant(0), x],
                             maximum_iterations=4)
        (gx,) = dj.gradients(y, [x])
    sess = dj.Session(g, optimize=0)
    for xv in (0.6, 1.7):
        v, dv = xv, 1.0
        for _ in range(4):
            v, dv = (v * 0.5, dv * 0.5) if v > 1.0 else (v * v + 0.5, dv * 2 * v)
        value, grad = sess.run([y, gx], {x: xv})
        np.testing.assert_allclose([value, grad], [v, dv], rtol=1e-12)


def test_cond_and_while_loop_are_plain_python_eagerly():
    x = dj.tensor(2.0, requires_grad=True)
    y = dj.cond(x > 1.0, lambda: x * x, lambda: -x)
    y.backward()
    assert y.item() == 4.0 and x.grad.item() == 4.0
    assert dj.while_loop(lambda v: v < 100, lambda v: v * 3, dj.tensor(1)).item() == 243
    bounded = dj.while_loop(lambda v: v < 100, lambda v: v * 3, [dj.tensor(1)],
                            maximum_iterations=2)
    assert isinstance(bounded, list) and bounded[0].item() == 9


def test_cond_runs_the_taken_branch_and_captures_outer_values():
    with dj.Graph() as g:
        p = dj.placeholder((), dj.bool, name="p")
        a = dj.placeholder((2,), name="a")
        k = dj.tensor([10.0, 20.0])  # an eager tensor, captured as a constant
        out = dj.cond(p, lambda: (a + k, a), lambda: (a * 2.0, k))
    sess = dj.Session(g)
    av = np.array([1.0, 2.0], np.float32)
    np.testing.assert_allclose(sess.run(out, {p: True, a: av}), [[11, 22], [1, 2]])
    np.testing.assert_allclose(sess.run(out, {p: False, a: av}), [[2, 4], [10, 20]])
    text = str(g)
    assert "true_branch" in text and "false_branch" in text and "return" in text


def test_badly_formed_control_flow_errors_name_the_problem():
    with dj.Graph():
        x = dj.placeholder((3,), name="x")
        with pytest.raises(dj.DTypeError, match="predicate must be a single bool"):
            dj.cond(x, lambda: x, lambda: x)
        with pytest.raises(dj.DTypeError, match="output 0 is float32 in one branch and int64"):
            dj.cond(dj.sum(x) > 0, lambda: x, lambda: dj.constant([1, 2, 3]))
        with pytest.raises(dj.ShapeError, match=r"loop variable 0 enters with shape \(3,\)"):
            dj.while_loop(lambda v: dj.sum(v) < 3, lambda v: dj.concat([v, v]), [x])
        with pytest.raises(dj.GraphError, match="2 values for 1 loop variables"):
            dj.while_loop(lambda v: dj.sum(v) < 3, lambda v: (v, v), [x])
        with pytest.raises(dj.GraphError, match="dj.cond"):
            if dj.sum(x) > 0:
                pass


def test_while_loop_inside_cond_and_second_order_gradients():
    with dj.Graph() as g:
        x = dj.placeholder((), dj.float64, name="x")

        def cube():
            one = dj.constant(1.0, dj.float64)
            _, v = dj.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x),
                                 [dj.constant(0), one], maximum_iterations=3)
            return v

        y = dj.cond(x > 0, cube, lambda: x * 2.0)
        (gx,) = dj.gradients(y, [x])
        (ggx,) = dj.gradients(gx, [x])
    g.verify()
    sess = dj.Session(g, optimize=0)
    np.testing.assert_allclose(sess.run([y, gx, ggx], {x: 1.5}), [1.5**3, 3 * 1.5**2, 6 * 1.5])
    np.testing.assert_allclose(sess.run([y, gx, ggx], {x: -1.5}), [-3.0, 2.0, 0.0])
