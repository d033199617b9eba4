"""conv2d as one op with blocked im2col (dongjing.ops.conv) against the general path
(unfold2d + matmul, short paths off) and torch's conv2d: forward, first and second gradients,
float32 and float64, strides, padding, odd sizes, several blocks of images; static and jit."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing import short_paths
from dongjing.errors import DongjingError
from dongjing.ops import conv

F = dj.nn.functional
SHAPES = [((3, 2, 7, 6), (4, 2, 3, 2), 1, 0), ((5, 3, 9, 8), (2, 3, 3, 3), (2, 1), (1, 2)),
          ((4, 2, 11, 10), (3, 2, 5, 5), 2, 2), ((2, 4, 5, 5), (3, 4, 1, 1), 1, 0)]


@pytest.fixture(params=[conv.BLOCK_BYTES, 500], ids=["one-block", "many-blocks"])
def block(request, monkeypatch):
    monkeypatch.setattr(conv, "BLOCK_BYTES", request.param)


def _run(x, w, b, stride, padding, second: bool):
    xt, wt, bt = (dj.tensor(a, requires_grad=True) for a in (x, w, b))
    y = F.conv2d(xt, wt, bt, stride, padding)
    if not second:
        dj.sum(y * y).backward()
        return [y.numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()]
    gx, gw = dj.autograd.grad(dj.sum(y * y), [xt, wt], create_graph=True)
    (dj.sum(gx * gx) * 0.5 + dj.sum(gw * gw)).backward()
    return [gx.numpy(), gw.numpy(), xt.grad.numpy(), wt.grad.numpy()]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,stride,padding", SHAPES)
def test_blocked_equals_im2col(block, dtype, xs, ws, stride, padding):
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in (xs, ws, ws[:1]))
    for second in (False, True):
        fast = _run(x, w, b, stride, padding, second)
        with short_paths.disabled():
            general = _run(x, w, b, stride, padding, second)
        tol = 1e-4 if dtype == np.float32 else 1e-12
        for f, g in zip(fast, general):
            if second:
                np.testing.assert_allclose(f, g, rtol=tol, atol=tol * np.abs(g).max())
            else:
                np.testing.assert_array_equal(f, g)  # first order: bit for bit


@pytest.mark.parametrize("xs,ws,stride,padding", SHAPES)
def test_blocked_matches_torch(block, xs, ws, stride, padding):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x, w, b = (rng.standard_normal(s) for s in (xs, ws, ws[:1]))
    ours = _run(x, w, b, stride, padding, second=False)
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    y = torch.nn.functional.conv2d(xt, wt, bt, stride, padding)
    (y * y).sum().backward()
    for a, t in zip(ours, [y.detach(), xt.grad, wt.grad, bt.grad]):
        np.testing.assert_allclose(a, t.numpy(), rtol=1e-10, atol=1e-10)


def test_static_and_jit_agree_with_eager():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 2, 6, 7)).astype(np.float32)
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)

    def loss_and_grads(xt, wt):
        y = F.conv2d(xt, wt, None, 1, 1)
        loss = dj.sum(dj.relu(y) * y)
        return [loss, *dj.autograd.grad(loss, [xt, wt])]

    eager = [t.numpy() for t in loss_and_grads(dj.tensor(x, requires_grad=True),
                                               dj.tensor(w, requires_grad=True))]
    for level in (0, 1, 2):
        g = dj.Graph()
        with g.as_default():
            xs = dj.placeholder(np.float32, (None, 2, 6, 7))
            ws = dj.placeholder(np.float32, (4, 2, 3, 3))
            fetches = loss_and_grads(xs, ws)
        got = dj.Session(g, optimize=level).run(fetches, {xs: x, ws: w})
        for a, e in zip(got, eager):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-4)
    jitted = dj.jit(lambda xt, wt: F.conv2d(xt, wt, None, 1, 1))
    np.testing.assert_allclose(jitted(dj.tensor(x), dj.tensor(w)).numpy(),
                               F.conv2d(dj.tensor(x), dj.tensor(w), None, 1, 1).numpy(),
                               rtol=1e-6, atol=1e-6)


def test_bad_input_is_a_dongjing_error():
    x = dj.tensor(np.zeros((1, 2, 4, 4), np.float32))
    with pytest.raises(DongjingError, match="conv2d"):
        conv.conv2d(x, dj.tensor(np.zeros((3, 5, 2, 2), np.float32)))
    with pytest.raises(DongjingError, match="conv2d"):
        conv.conv2d(x, dj.tensor(np.zeros((3, 2, 2, 2), np.float64)))
    with pytest.raises(DongjingError, match="conv2d"):
        conv.conv2d(x, dj.tensor(np.zeros((3, 2, 5, 5), np.float32)))
    with pytest.raises(DongjingError, match="conv2d_input_grad"):
        conv.conv2d_input_grad(x, dj.tensor(np.zeros((2, 3, 2, 2), np.float32)), (9, 9))


def test_one_input_channel_takes_the_general_path():
    """The per-shape choice: one input channel is unfold2d + matmul (measured no faster)."""
    g = dj.Graph()
    with g.as_default():
        for channels, op in ((1, "unfold2d"), (2, "conv2d")):
            x = dj.placeholder(np.float32, (None, channels, 6, 6))
            F.conv2d(x, dj.placeholder(np.float32, (4, channels, 3, 3)))
            assert op in [n.op.name for n in g.nodes]
