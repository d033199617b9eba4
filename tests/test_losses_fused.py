"""Eager cross_entropy on class indices as one tape node (nn/losses_fused.py) against the composed
ops (nll_loss of log_softmax: the same terms): equal values and gradients, the usual tape
behaviour, and the composed path wherever the fused one does not apply."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn.functional as F


def _data(dtype, n=7, c=5, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, c)) * 3).astype(dtype), rng.integers(0, c, n)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_equals_composed(reduction, dtype):
    z0, y0 = _data(dtype)
    y = dj.tensor(y0)
    za = dj.tensor(z0, requires_grad=True)
    zb = dj.tensor(z0, requires_grad=True)
    fused = F.cross_entropy(za * 2.0, y, reduction=reduction)
    composed = F.nll_loss(F.log_softmax(zb * 2.0, 1), y, reduction=reduction)
    assert type(fused.grad_fn).__name__ == "CrossEntropyLossBackward0"
    assert fused.dtype == composed.dtype and fused.shape == composed.shape
    assert np.array_equal(fused.numpy(), composed.numpy())
    seed = dj.tensor(np.linspace(0.5, 2.0, y0.size).astype(dtype)) if reduction == "none" \
        else None
    fused.backward(seed)
    composed.backward(seed)
    assert np.array_equal(za.grad.numpy(), zb.grad.numpy())


def test_fused_node_tape_behaviour():
    z0, y0 = _data(np.float32)
    z = dj.tensor(z0, requires_grad=True)
    seen = []
    z.register_hook(lambda g: seen.append(g.shape))
    loss = F.cross_entropy(z, dj.tensor(y0))
    assert loss.grad_fn.next_functions[0][0] is not None
    loss.backward(retain_graph=True)
    first = z.grad.numpy().copy()
    loss.backward()  # accumulates
    np.testing.assert_array_equal(z.grad.numpy(), 2 * first)
    assert seen == [(7, 5), (7, 5)]
    with pytest.raises(dj.errors.AutogradError, match="backward through the graph a second"):
        loss.backward()
    with dj.no_grad():
        assert F.cross_entropy(z, dj.tensor(y0)).grad_fn is None
    w = dj.tensor(z0, requires_grad=True)
    loss = F.cross_entropy(w, dj.tensor(y0))
    with dj.no_grad():
        w.add_(1.0)
    with pytest.raises(Exception, match="modified by an inplace operation"):
        loss.backward()


def test_fused_create_graph_second_order():
    z0, y0 = _data(np.float64)
    y = dj.tensor(y0)
    za = dj.tensor(z0, requires_grad=True)
    zb = dj.tensor(z0, requires_grad=True)
    (ga,) = dj.grad(F.cross_entropy(za, y), [za], create_graph=True)
    (gb,) = dj.grad(F.nll_loss(F.log_softmax(zb, 1), y), [zb], create_graph=True)
    np.testing.assert_allclose(ga.numpy(), gb.numpy(), rtol=1e-12)
    (ga * ga).sum().backward()
    (gb * gb).sum().backward()
    np.testing.assert_allclose(za.grad.numpy(), zb.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_composed_path_where_fused_does_not_apply():
    z0, y0 = _data(np.float32)
    y0[2] = -100  # ignore_index: masked by the composed path
    z = dj.tensor(z0, requires_grad=True)
    loss = F.cross_entropy(z, dj.tensor(y0))
    assert type(loss.grad_fn).__name__ != "CrossEntropyLossBackward0"
    keep = np.arange(7) != 2
    ref = F.cross_entropy(dj.tensor(z0[keep]), dj.tensor(y0[keep]))
    np.testing.assert_allclose(loss.numpy(), ref.numpy(), rtol=1e-6)
    y0[2] = 5  # not a class: the composed path's error
    with pytest.raises(dj.errors.DongjingError):
        F.cross_entropy(z, dj.tensor(y0))
    z3 = dj.tensor(np.zeros((2, 3, 4), np.float32), requires_grad=True)  # (N, C, d)
    loss = F.cross_entropy(z3, dj.tensor(np.zeros((2, 4), np.int64)))
    assert type(loss.grad_fn).__name__ != "CrossEntropyLossBackward0"
    np.testing.assert_allclose(loss.numpy(), np.log(3.0), rtol=1e-6)
