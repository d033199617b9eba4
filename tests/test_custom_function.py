"""dj.autograd.Function: PyTorch-style custom ops with a hand-written backward, in eager mode,
in static graphs at every level and under dj.jit."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.errors import DongjingError


class ScaledCube(dj.autograd.Function):
    """y = scale * x**3 (scale a Python number: an attribute, no gradient)."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x * x * x * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3.0 * x * x * ctx.scale, None


class Clamp01(dj.autograd.Function):
    """A straight-through clamp: the gradient passes unchanged (not the true derivative)."""

    @staticmethod
    def forward(ctx, x):
        return dj.clip(x, 0.0, 1.0)

    @staticmethod
    def backward(ctx, g):
        return g


def _x():
    return np.array([-0.5, 0.25, 0.75, 1.5])


def test_eager_forward_and_backward():
    x = dj.tensor(_x(), requires_grad=True)
    y = ScaledCube.apply(x, 2.0)
    np.testing.assert_allclose(y.numpy(), 2 * _x() ** 3)
    assert type(y.grad_fn).__name__ == "ScaledCubeBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * _x() ** 2)


def test_gradcheck_and_needs_input_grad():
    seen = []

    class Mul(dj.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            seen.append(ctx.needs_input_grad)
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    a = dj.tensor(_x(), requires_grad=True)
    b = dj.tensor(_x()[::-1].copy())
    assert dj.autograd.gradcheck(lambda a: Mul.apply(a, b), [a])
    assert seen[0] == (True, False)


def test_a_straight_through_estimator_uses_the_users_backward():
    x = dj.tensor(_x(), requires_grad=True)
    Clamp01.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones(4))


@pytest.mark.parametrize("optimize", [0, 1, 2])
def test_static_graph_values_and_gradients(optimize):
    with dj.Graph() as g:
        x = dj.placeholder((None,), dj.float64, name="x")
        y = ScaledCube.apply(x, 2.0)
        (gx,) = dj.gradients(y.sum(), [x])
    yv, gv = dj.Session(g, optimize=optimize).run([y, gx], {x: _x()})
    np.testing.assert_allclose(yv, 2 * _x() ** 3)
    np.testing.assert_allclose(gv, 6 * _x() ** 2)


def test_under_jit_with_gradients():
    f = dj.jit(lambda x: ScaledCube.apply(x, 2.0).sum())
    x = dj.tensor(_x(), requires_grad=True)
    loss = f(x)
    loss.backward()
    np.testing.assert_allclose(loss.item(), (2 * _x() ** 3).sum())
    np.testing.assert_allclose(x.grad.numpy(), 6 * _x() ** 2)


def test_a_backward_with_the_wrong_number_of_gradients_is_named():
    class Bad(dj.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    x = dj.tensor(_x(), requires_grad=True)
    with pytest.raises(DongjingError, match="Bad.backward returned 1 gradients"):
        Bad.apply(x, x).sum().backward()


def test_functions_are_not_entered_in_the_op_table():
    ScaledCube.apply(dj.tensor(_x()), 1.0)
    assert "ScaledCube" not in dj.ops.OPS
