"""The seeds' static examples in our API: seed 000's linear model trained in a graph (== eager ==
hand-derived floats) and seed 002's while_loop counter (== a Python `while` eagerly)."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj

LR, STEPS = 0.01, 100


def _by_hand() -> list[float]:
    """Seed 000's model with its gradients derived by hand, in Python floats."""
    x, y, w, b = 1.0, 2.0, 2.0, 3.0
    losses = []
    for _ in range(STEPS):
        y_hat = w * x + b
        losses.append((y_hat - y) * (y_hat - y))
        dz = 2.0 * (y_hat - y)  # dz/dy_hat
        w, b = w - LR * dz * x, b - LR * dz
    return losses


def _eager() -> list[float]:
    x, y = dj.tensor(1.0), dj.tensor(2.0)
    w, b = dj.Variable(2.0, name="w"), dj.Variable(3.0, name="b")
    losses = []
    for _ in range(STEPS):
        loss = (w * x + b - y) * (w * x + b - y)
        loss.backward()
        losses.append(loss.item())
        with dj.no_grad():
            dj.assign(w, w - LR * w.grad)
            dj.assign(b, b - LR * b.grad)
        w.grad = b.grad = None
    return losses


def _static(level):
    with dj.Graph() as g:
        x, y = dj.constant(1.0), dj.constant(2.0)
        w, b = dj.Variable(2.0, name="w"), dj.Variable(3.0, name="b")
        y_hat = w * x + b
        loss = (y_hat - y) * (y_hat - y)
        grad_w, grad_b = dj.gradients(loss, [w, b])
        train = dj.group(dj.assign(w, w - LR * grad_w), dj.assign(b, b - LR * grad_b))
    with dj.Session(g, optimize=level) as sess:
        losses = [float(sess.run([loss, train])[0]) for _ in range(STEPS)]
    return losses, w, b


@pytest.mark.parametrize("level", [0, 1, 2], ids=["interpreted", "cleaned", "compiled"])
def test_seed000_static_equals_eager_equals_by_hand(level):
    by_hand = _by_hand()
    static, w, b = _static(level)
    np.testing.assert_allclose(static, _eager(), rtol=1e-6)
    np.testing.assert_allclose(static, by_hand, rtol=1e-5)
    assert by_hand[0] == 9.0 and static[-1] < 1e-2  # (2+3-2)^2 at first, then it converges
    # the Variables were updated in place: their eager values are the trained ones
    assert abs(w.item() + b.item() - 2.0) < 0.1


def test_seed000_one_step_gradients_are_the_hand_derived_ones():
    with dj.Graph() as g:
        w, b = dj.Variable(2.0), dj.Variable(3.0)
        loss = (w * 1.0 + b - 2.0) * (w * 1.0 + b - 2.0)
        grads = dj.gradients(loss, [w, b])
    assert dj.Session(g).run(grads) == [6.0, 6.0]


def _counter_cond(first_counter, second_counter, *args):
    return first_counter < second_counter


def _counter_body(first_counter, second_counter):
    first_counter = dj.add(first_counter, 2)
    second_counter = dj.add(second_counter, 1)
    return first_counter, second_counter


def test_seed002_while_loop_counter():
    with dj.Graph() as g:
        first_counter = dj.constant(0)
        second_counter = dj.constant(10)
        c1, c2 = dj.while_loop(_counter_cond, _counter_body, [first_counter, second_counter])
    with dj.Session(g) as sess:
        counter_1_res, counter_2_res = sess.run([c1, c2])
    assert (counter_1_res, counter_2_res) == (20, 20)
    assert "while_loop" in str(g) and "while_body" in str(g)


def test_seed002_same_code_eagerly_and_python_while():
    c1, c2 = dj.while_loop(_counter_cond, _counter_body, [dj.tensor(0), dj.tensor(10)])
    assert (c1.item(), c2.item()) == (20, 20)
    first_counter, second_counter = dj.tensor([0.0]), dj.tensor([10.0])
    while (first_counter < second_counter)[0]:
        first_counter += 2
        second_counter += 1
    assert (first_counter.item(), second_counter.item()) == (20.0, 20.0)


def test_python_while_on_symbolic_tensor_points_to_while_loop():
    with dj.Graph():
        a = dj.constant(0)
        with pytest.raises(dj.GraphError, match="dj.while_loop"):
            while a < 10:
                a = a + 1
