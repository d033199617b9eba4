"""The dynamic-graph code examples of the seeds (shared/seeds), in dongjing's API."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj


def test_seed000_scalar_linear_regression_matches_hand_derived_gradients():
    # seed 000: x=1, y=2 fixed; w=2, b=1 trainable; y_hat = w*x + b; z = (y_hat - y)^2
    x = dj.tensor(1.0, dtype=dj.float64)
    y = dj.tensor(2.0, dtype=dj.float64)
    w = dj.tensor(2.0, dtype=dj.float64, requires_grad=True)
    b = dj.tensor(1.0, dtype=dj.float64, requires_grad=True)
    pw, pb, lr = 2.0, 1.0, 0.01
    for step in range(100):
        y_hat = w * x + b
        z = (y_hat - y) * (y_hat - y)
        z.backward()
        # the same arithmetic in Python floats with hand-derived gradients
        p_hat = pw * 1.0 + pb
        pz = (p_hat - 2.0) * (p_hat - 2.0)
        gw, gb = 2 * (p_hat - 2.0) * 1.0, 2 * (p_hat - 2.0)
        assert z.item() == pytest.approx(pz, abs=1e-6)
        assert w.grad.item() == pytest.approx(gw, abs=1e-6)
        assert b.grad.item() == pytest.approx(gb, abs=1e-6)
        if step == 0:
            # the seed's recursive backward double-counts (w.grad 4, b.grad 3); the truth is 2, 2
            assert (w.grad.item(), b.grad.item()) == (2.0, 2.0)
        with dj.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
        w.grad = None
        b.grad = None
        pw, pb = pw - lr * gw, pb - lr * gb
    assert z.item() < 1.0


def test_seed003_leaves_grads_and_grad_fns():
    w = dj.tensor([1.0], requires_grad=True)
    x = dj.tensor([2.0], requires_grad=True)
    a = dj.add(w, x)
    b = dj.add(w, 1)
    y = dj.mul(a, b)
    y.backward()
    assert w.grad.tolist() == [5.0]
    assert x.grad.tolist() == [2.0]
    assert [t.is_leaf for t in (w, x, a, b, y)] == [True, True, False, False, False]
    with pytest.warns(UserWarning, match="not a leaf"):
        assert (a.grad, b.grad, y.grad) == (None, None, None)
    assert (w.grad_fn, x.grad_fn) == (None, None)
    assert [type(t.grad_fn).__name__ for t in (a, b, y)] == [
        "AddBackward0", "AddBackward0", "MulBackward0"]
    assert repr(y.grad_fn).startswith("<MulBackward0 object at 0x")
    assert y.grad_fn.next_functions[0][0] is a.grad_fn


def test_seed003_retain_grad_keeps_non_leaf_gradient():
    w = dj.tensor([1.0], requires_grad=True)
    x = dj.tensor([2.0], requires_grad=True)
    a = dj.add(w, x)
    a.retain_grad()
    y = dj.mul(a, dj.add(w, 1))
    y.backward()
    assert a.grad.tolist() == [2.0]


def test_seed002_mm_backward_with_gradient_twice():
    x = dj.tensor([[1.0, 2.0]], requires_grad=True)
    y = dj.tensor([[3.0, 4.0], [5.0, 6.0]])
    loss = dj.mm(x, y)
    loss.backward(dj.tensor([[1.0, 0.0]]), retain_graph=True)
    assert x.grad.tolist() == [[3.0, 5.0]]
    x.grad.zero_()
    loss.backward(dj.tensor([[0.0, 1.0]]))
    assert x.grad.tolist() == [[4.0, 6.0]]


def test_seed002_second_backward_needs_retain_graph():
    rng = np.random.default_rng(0)
    weight = dj.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    inputs = dj.tensor(rng.standard_normal((2, 3)))
    loss = dj.sum(inputs @ weight)
    loss.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        loss.backward()


def test_seed002_retain_graph_allows_second_backward_and_accumulates():
    weight = dj.tensor(np.ones((3, 4)), requires_grad=True)
    inputs = dj.tensor(np.arange(6.0).reshape(2, 3))
    loss = dj.sum(inputs @ weight)
    loss.backward(retain_graph=True)
    first = weight.grad.numpy().copy()
    loss.backward()
    np.testing.assert_allclose(weight.grad.numpy(), 2 * first)


def test_seed002_dynamic_while_counter():
    first_counter = dj.tensor([0.0])
    second_counter = dj.tensor([10.0])
    while (first_counter < second_counter)[0]:
        first_counter += 2
        second_counter += 1
    assert first_counter.tolist() == [20.0]
    assert second_counter.tolist() == [20.0]


def test_seed004_square_plus_x():
    x = dj.tensor(np.array([5.0], dtype=np.float32), requires_grad=True)
    y = x**2 + x
    assert y.tolist() == [30.0]
    y.backward()
    assert x.grad.tolist() == [11.0]
