"""Layers against naive NumPy loops and formulas: conv, pooling, norms, dropout, losses."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing.errors import ShapeError


def _naive_conv(x, w, b, stride, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3])) + b
    return out


def _naive_pool(x, k, stride, pad, reduce, fill):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = reduce(xp[:, :, i * stride:i * stride + k,
                                        j * stride:j * stride + k], axis=(2, 3))
    return out


@pytest.mark.parametrize("stride,pad", [(1, 0), (1, 1), (2, 1)])
def test_conv2d_matches_naive_loop_and_gradients(stride, pad):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 7, 6))
    w = rng.standard_normal((4, 3, 3, 3))
    b = rng.standard_normal(4)
    out = F.conv2d(dj.tensor(x, dtype=dj.float64), dj.tensor(w, dtype=dj.float64),
                   dj.tensor(b, dtype=dj.float64), stride, pad)
    np.testing.assert_allclose(out.numpy(), _naive_conv(x, w, b, stride, pad), atol=1e-10)
    # gradients for input, weight and bias against finite differences
    args = [dj.tensor(a[:1, :2, :5, :5] if a.ndim == 4 and a is x else a, dtype=dj.float64,
                      requires_grad=True) for a in (x, w[:, :2], b)]
    assert dj.autograd.gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride, pad), args)


def test_conv2d_module_and_bad_shapes():
    conv = nn.Conv2d(3, 5, 3, stride=2, padding=1)
    assert conv.weight.shape == (5, 3, 3, 3) and conv(dj.randn(2, 3, 8, 8)).shape == (2, 5, 4, 4)
    with pytest.raises(ShapeError, match="conv2d.*channels"):
        conv(dj.randn(2, 4, 8, 8))
    with pytest.raises(ShapeError, match=r"conv2d: expects an \(N, C, H, W\)"):
        conv(dj.randn(3, 8, 8))


@pytest.mark.parametrize("k,stride,pad", [(2, 2, 0), (3, 1, 1), (3, 2, 1)])
def test_pooling_matches_naive_loop(k, stride, pad):
    x = np.random.default_rng(1).standard_normal((2, 3, 7, 7))
    got = nn.MaxPool2d(k, stride, pad)(dj.tensor(x, dtype=dj.float64)).numpy()
    np.testing.assert_allclose(got, _naive_pool(x, k, stride, pad, np.max, -np.inf))
    got = nn.AvgPool2d(k, stride, pad)(dj.tensor(x, dtype=dj.float64)).numpy()
    np.testing.assert_allclose(got, _naive_pool(x, k, stride, pad, np.mean, 0.0))


def test_max_pool_gradient_goes_to_the_max():
    x = dj.tensor([[[[1.0, 5.0], [2.0, 3.0]]]], requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[[[0.0, 1.0], [0.0, 0.0]]]])
    y = dj.tensor(np.random.default_rng(2).permutation(32).reshape(1, 2, 4, 4) * 0.1,
                  dtype=dj.float64, requires_grad=True)
    assert dj.autograd.gradcheck(lambda t: F.avg_pool2d(F.max_pool2d(t, 2, 1), 2, 1), [y])


def test_batchnorm_train_updates_running_stats_and_eval_uses_them():
    rng = np.random.default_rng(3)
    bn = nn.BatchNorm2d(3, momentum=0.1)
    x = rng.standard_normal((4, 3, 5, 5)) * 2 + 1
    out = bn(dj.tensor(x)).numpy()
    mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
    expect = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(out, expect, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * mean, rtol=1e-5)
    n = 4 * 5 * 5
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * var * n / (n - 1), rtol=1e-5)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    out = bn(dj.tensor(x)).numpy()
    rm, rv = bn.running_mean.numpy(), bn.running_var.numpy()
    expect = (x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(out, expect, rtol=1e-4, atol=1e-5)
    assert bn.num_batches_tracked.item() == 1  # eval leaves the statistics alone


def test_batchnorm1d_gradient():
    bn = nn.BatchNorm1d(3)
    x = dj.tensor(np.random.default_rng(4).standard_normal((5, 3)), dtype=dj.float64,
                  requires_grad=True)
    w = dj.tensor([0.5, 1.0, 2.0], dtype=dj.float64, requires_grad=True)
    assert dj.autograd.gradcheck(lambda x, w: F.batch_norm(x, None, None, w, training=True),
                                 [x, w])
    with pytest.raises(ShapeError, match=r"BatchNorm1d\(3\)"):
        bn(dj.randn(5, 4))


def test_layer_norm():
    x = np.random.default_rng(5).standard_normal((2, 3, 4))
    ln = nn.LayerNorm(4)
    out = ln(dj.tensor(x)).numpy()
    expect = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out, expect, rtol=1e-4, atol=1e-5)
    t = dj.tensor(x, dtype=dj.float64, requires_grad=True)
    assert dj.autograd.gradcheck(lambda t: F.layer_norm(t, (3, 4)), [t])


def test_dropout_is_seeded_scaled_and_off_in_eval():
    drop = nn.Dropout(0.25)
    x = dj.ones(1000)
    dj.manual_seed(0)
    a = drop(x).numpy()
    dj.manual_seed(0)
    b = drop(x).numpy()
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a)) == {0.0, np.float32(1 / 0.75)}
    assert 0.2 < (a == 0).mean() < 0.3
    drop.eval()
    assert drop(x) is x


def test_embedding_gathers_and_scatters():
    emb = nn.Embedding(5, 3)
    idx = dj.tensor([[0, 4], [4, 1]])
    out = emb(idx)
    assert out.shape == (2, 2, 3)
    np.testing.assert_array_equal(out.numpy()[0, 1], emb.weight.numpy()[4])
    out.sum().backward()
    np.testing.assert_array_equal(emb.weight.grad.numpy()[:, 0], [1, 1, 0, 0, 2])


def _log_softmax(z):
    z = z - z.max(1, keepdims=True)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


def test_losses_match_formulas():
    rng = np.random.default_rng(6)
    z = rng.standard_normal((6, 4))
    y = np.array([0, 3, 1, 2, 2, 0])
    logp = _log_softmax(z)
    ce = -logp[np.arange(6), y].mean()
    zt = dj.tensor(z, dtype=dj.float64)
    np.testing.assert_allclose(F.cross_entropy(zt, dj.tensor(y)).item(), ce, rtol=1e-10)
    np.testing.assert_allclose(F.nll_loss(F.log_softmax(zt, 1), dj.tensor(y)).item(), ce)
    q = np.eye(4)[y] * 0.9 + 0.1 / 4
    np.testing.assert_allclose(F.cross_entropy(zt, dj.tensor(y), label_smoothing=0.1).item(),
                               -(q * logp).sum(1).mean(), rtol=1e-10)
    np.testing.assert_allclose(
        F.cross_entropy(zt, dj.tensor(y), reduction="none").numpy(), -logp[np.arange(6), y])
    t = rng.uniform(size=(6, 4))
    np.testing.assert_allclose(F.mse_loss(zt, dj.tensor(t, dtype=dj.float64)).item(),
                               ((z - t) ** 2).mean())
    bce = -(t * np.log(1 / (1 + np.exp(-z))) + (1 - t) * np.log(1 - 1 / (1 + np.exp(-z))))
    np.testing.assert_allclose(
        F.binary_cross_entropy_with_logits(zt, dj.tensor(t, dtype=dj.float64)).item(),
        bce.mean(), rtol=1e-10)
    big = dj.tensor([[1000.0, -1000.0]])
    assert np.isfinite(F.binary_cross_entropy_with_logits(big, dj.tensor([[0.0, 1.0]])).item())
    zg = dj.tensor(z, dtype=dj.float64, requires_grad=True)
    assert dj.autograd.gradcheck(
        lambda a: F.cross_entropy(a, dj.tensor(y), label_smoothing=0.2), [zg])


def test_gelu_matches_erf_formula():
    import math

    x = np.linspace(-4, 4, 33)
    exact = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    np.testing.assert_allclose(F.gelu(dj.tensor(x, dtype=dj.float64)).numpy(), exact, rtol=1e-14,
                               atol=1e-300)
    approx = F.gelu(dj.tensor(x, dtype=dj.float64), approximate="tanh").numpy()
    np.testing.assert_allclose(approx, exact, atol=1e-3)
    assert nn.GELU()(dj.tensor([0.0])).item() == 0.0


def test_embedding_padding_row_gets_no_gradient():
    emb = nn.Embedding(4, 2, padding_idx=1)
    np.testing.assert_array_equal(emb.weight.numpy()[1], [0.0, 0.0])
    emb(dj.tensor([1, 2, 1])).sum().backward()
    np.testing.assert_array_equal(emb.weight.grad.numpy()[:, 0], [0, 0, 1, 0])


def test_max_pool_padding_never_takes_a_windows_gradient():
    """A window of only -inf values (padding is -inf too) gives its gradient to its first real
    position, in backward and double backward (PyTorch's figures for this 3x3 input)."""
    x = dj.tensor(np.full((1, 1, 3, 3), -np.inf), requires_grad=True)
    y = dj.nn.functional.max_pool2d(x, 3, stride=1, padding=1)
    g = dj.tensor(np.arange(1.0, 10.0).reshape(1, 1, 3, 3), requires_grad=True)
    (gx,) = dj.grad(y, x, g, create_graph=True)
    np.testing.assert_array_equal(gx.detach().numpy()[0, 0],
                                  [[1 + 2 + 4 + 5, 3 + 6, 0], [7 + 8, 9, 0], [0, 0, 0]])
    gg = dj.tensor(np.arange(9.0).reshape(1, 1, 3, 3) * 10 + 5)
    (ggg,) = dj.grad(gx, g, gg)
    first_real = [[5, 5, 15], [5, 5, 15], [35, 35, 45]]  # gg at each window's first real cell
    np.testing.assert_array_equal(ggg.numpy()[0, 0], first_real)
