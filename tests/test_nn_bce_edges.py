"""binary_cross_entropy at probabilities of exactly 0 or 1 (a saturated sigmoid): the value
clamps each log at -100 and the gradient is PyTorch's (x - t) / max(x (1 - x), 1e-12), large
but finite, where the composed formula gave 0 * inf = NaN."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn.functional as F

P = [0.0, 1.0, 0.5, 1e-30, 0.3]
T = [1.0, 0.0, 1.0, 0.0, 0.6]


def _grads():
    x, t = dj.tensor(P, requires_grad=True), dj.tensor(T, requires_grad=True)
    loss = F.binary_cross_entropy(x, t)
    loss.backward()
    return loss, x.grad.numpy(), t.grad.numpy()


def test_gradient_is_finite_where_the_probability_saturates():
    loss, gx, gt = _grads()
    expected = (np.array(P) - T) / np.maximum(np.array(P) * (1 - np.array(P)), 1e-12) / 5
    assert np.isfinite(gx).all()
    np.testing.assert_allclose(gx, expected, rtol=1e-6)
    assert loss.item() == pytest.approx((100 + 100 + np.log(2) + 1e-30
                                         - 0.6 * np.log(0.3) - 0.4 * np.log(0.7)) / 5, rel=1e-6)
    assert gt[0] == np.inf and gt[1] == -np.inf and np.isfinite(gt[2:]).all()


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    x, t = torch.tensor(P, requires_grad=True), torch.tensor(T, requires_grad=True)
    loss = torch.nn.functional.binary_cross_entropy(x, t)
    loss.backward()
    ours, gx, gt = _grads()
    assert ours.item() == pytest.approx(loss.item(), rel=1e-6)
    np.testing.assert_allclose(gx, x.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(gt, t.grad.numpy(), rtol=1e-6)


def test_static_graph_gives_the_same_gradient():
    with dj.Graph().as_default():
        x = dj.placeholder(dj.float32, (5,))
        t = dj.placeholder(dj.float32, (5,))
        loss = F.binary_cross_entropy(x, t)
        (gx,) = dj.gradients(loss, [x])
        feed = {x: np.array(P, np.float32), t: np.array(T, np.float32)}
        with dj.Session() as session:
            value = session.run(gx, feed)
    np.testing.assert_allclose(value, _grads()[1], rtol=1e-6)
