"""The layers and losses added for issue 33, without PyTorch: values against references
written here with NumPy loops, float64 gradient checks, and eager == static graph == dj.jit."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dongjing as dj
from dongjing.autograd import gradcheck

F = dj.nn.functional
RNG = np.random.default_rng(3)


def _r(*shape):
    return RNG.uniform(-1, 1, shape)


def _t(a, grad=False):
    return dj.tensor(np.asarray(a, np.float64), requires_grad=grad)


# --- NumPy references -------------------------------------------------------------------------
def conv_transpose2d_ref(x, w, stride, padding, output_padding=(0, 0), dilation=(1, 1)):
    n, cin, h, wd = x.shape
    _, cout, kh, kw = w.shape
    oh = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1
    ow = (wd - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + output_padding[1] + 1
    out = np.zeros((n, cout, oh, ow))
    for i in range(h):
        for j in range(wd):
            for a in range(kh):
                for b in range(kw):
                    r = i * stride[0] - padding[0] + a * dilation[0]
                    c = j * stride[1] - padding[1] + b * dilation[1]
                    if 0 <= r < oh and 0 <= c < ow:
                        out[:, :, r, c] += np.einsum("nc,co->no", x[:, :, i, j], w[:, :, a, b])
    return out


def unfold_ref(x, k, dilation, padding, stride):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    oh = (h + 2 * padding[0] - dilation[0] * (k[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (k[1] - 1) - 1) // stride[1] + 1
    cols = np.zeros((n, c * k[0] * k[1], oh * ow))
    for ci in range(c):
        for a in range(k[0]):
            for b in range(k[1]):
                row = (ci * k[0] + a) * k[1] + b
                for i in range(oh):
                    for j in range(ow):
                        cols[:, row, i * ow + j] = xp[:, ci, i * stride[0] + a * dilation[0],
                                                      j * stride[1] + b * dilation[1]]
    return cols


def test_conv_transpose2d_matches_a_scatter_loop():
    x, w, b = _r(2, 3, 3, 4), _r(3, 2, 2, 3), _r(2)
    got = F.conv_transpose2d(_t(x), _t(w), _t(b), stride=(2, 1), padding=(1, 1),
                             output_padding=(1, 0), dilation=(1, 2))
    want = conv_transpose2d_ref(x, w, (2, 1), (1, 1), (1, 0), (1, 2)) + b[None, :, None, None]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_conv_transpose2d_groups_are_independent_blocks():
    x, w = _r(1, 4, 3, 3), _r(4, 1, 2, 2)
    got = F.conv_transpose2d(_t(x), _t(w), groups=2, stride=2).numpy()
    for g in range(2):
        want = conv_transpose2d_ref(x[:, 2 * g:2 * g + 2], w[2 * g:2 * g + 2], (2, 2), (0, 0))
        np.testing.assert_allclose(got[:, g:g + 1], want, rtol=1e-12)


def test_conv_transpose_is_the_adjoint_of_conv2d():
    x, w, y = _r(2, 3, 6, 5), _r(4, 3, 3, 3), _r(2, 4, 3, 3)  # conv2d: stride 2, padding 1
    lhs = np.sum(F.conv2d(_t(x), _t(w), stride=2, padding=1).numpy() * y)
    rhs = np.sum(x * F.conv_transpose2d(_t(y), _t(w), stride=2, padding=1,
                                        output_padding=(1, 0)).numpy())
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_conv_transpose1d_and_module_output_size():
    x, w = _r(2, 3, 5), _r(3, 2, 3)
    got = F.conv_transpose1d(_t(x), _t(w), stride=2).numpy()
    want = conv_transpose2d_ref(x[:, :, None], w[:, :, None], (1, 2), (0, 0))[:, :, 0]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    layer = dj.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    assert layer.weight.shape == (3, 2, 3, 3)
    assert layer(dj.randn(1, 3, 4, 4), output_size=(8, 8)).shape == (1, 2, 8, 8)
    assert layer(dj.randn(1, 3, 4, 4)).shape == (1, 2, 7, 7)
    with pytest.raises(ValueError, match="not reachable"):
        layer(dj.randn(1, 3, 4, 4), output_size=(10, 10))
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose2d(_t(_r(1, 3, 2, 2)), _t(_r(3, 1, 2, 2)), output_padding=1)


def test_unfold_and_fold_against_loops_and_each_other():
    x = _r(2, 3, 5, 6)
    args = ((2, 3), (2, 1), (1, 1), (1, 2))
    cols = F.unfold(_t(x), *args).numpy()
    np.testing.assert_allclose(cols, unfold_ref(x, *args), rtol=1e-12)
    y = _r(*cols.shape)
    back = F.fold(_t(y), (5, 6), *args).numpy()
    assert np.sum(cols * y) == pytest.approx(np.sum(x * back), rel=1e-12)  # adjoint
    assert dj.nn.Fold((5, 6), (2, 3), (2, 1), (1, 1), (1, 2))(_t(y)).shape == (2, 3, 5, 6)
    with pytest.raises(dj.ShapeError, match="blocks"):
        F.fold(_t(y[:, :, :-1]), (5, 6), *args)


def test_group_and_instance_norm_against_numpy():
    x, w, b = _r(2, 6, 3, 2), _r(6), _r(6)
    g = x.reshape(2, 3, -1)
    want = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    want = want.reshape(x.shape) * w[:, None, None] + b[:, None, None]
    np.testing.assert_allclose(F.group_norm(_t(x), 3, _t(w), _t(b)).numpy(), want, rtol=1e-12)
    m = x.mean((2, 3), keepdims=True)
    v = x.var((2, 3), keepdims=True)
    np.testing.assert_allclose(F.instance_norm(_t(x)).numpy(), (x - m) / np.sqrt(v + 1e-5),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="divisible"):
        dj.nn.GroupNorm(4, 6)


def test_instance_norm_running_statistics():
    layer = dj.nn.InstanceNorm1d(2, momentum=0.5, track_running_stats=True, dtype=dj.float64)
    x = _r(3, 2, 4)
    layer(_t(x))
    per_instance_var = x.var(2, ddof=1)
    np.testing.assert_allclose(layer.running_mean.numpy(), 0.5 * x.mean(2).mean(0), rtol=1e-12)
    np.testing.assert_allclose(layer.running_var.numpy(), 0.5 + 0.5 * per_instance_var.mean(0),
                               rtol=1e-12)
    assert int(layer.num_batches_tracked.item()) == 1
    layer.eval()
    want = (x - layer.running_mean.numpy()[:, None]) / np.sqrt(
        layer.running_var.numpy()[:, None] + 1e-5)
    np.testing.assert_allclose(layer(_t(x)).numpy(), want, rtol=1e-12)


def test_pixel_shuffle_places_each_channel():
    x = _r(2, 12, 2, 3)
    out = F.pixel_shuffle(_t(x), 2).numpy()
    assert out.shape == (2, 3, 4, 6)
    for c in range(3):
        for i in range(2):
            for j in range(2):
                np.testing.assert_array_equal(out[:, c, i::2, j::2], x[:, c * 4 + i * 2 + j])
    np.testing.assert_array_equal(F.pixel_unshuffle(_t(out), 2).numpy(), x)
    assert dj.nn.PixelShuffle(2)(_t(x[0])).shape == (3, 4, 6)  # unbatched
    with pytest.raises(dj.ShapeError, match="divisible"):
        F.pixel_shuffle(_t(_r(1, 6, 2, 2)), 2)


@pytest.mark.parametrize("layer, mode", [
    (dj.nn.ReflectionPad2d((1, 2, 0, 1)), "reflect"),
    (dj.nn.ReplicationPad2d((1, 2, 0, 1)), "edge"),
    (dj.nn.CircularPad2d((1, 2, 0, 1)), "wrap"),
    (dj.nn.ZeroPad2d((1, 2, 0, 1)), "constant"),
])
def test_pad_layers_match_numpy_pad(layer, mode):
    x = _r(1, 2, 3, 4)
    want = np.pad(x, ((0, 0), (0, 0), (0, 1), (1, 2)), mode=mode)
    np.testing.assert_allclose(layer(_t(x)).numpy(), want)


def test_constant_and_1d_3d_pads():
    x = _r(2, 3)
    np.testing.assert_allclose(dj.nn.ConstantPad1d((1, 2), 7.0)(_t(x)).numpy(),
                               np.pad(x, ((0, 0), (1, 2)), constant_values=7.0))
    assert dj.nn.ReflectionPad3d(1)(_t(_r(1, 3, 3, 3))).shape == (1, 5, 5, 5)
    with pytest.raises(ValueError, match="4 ints"):
        dj.nn.ZeroPad2d((1, 2, 3))


def test_distances_against_numpy():
    a, b = _r(4, 3), _r(5, 3)
    diff = a[:, None] - b[None]
    np.testing.assert_allclose(dj.cdist(_t(a), _t(b)).numpy(),
                               np.sqrt((diff ** 2).sum(-1)), rtol=1e-12)
    np.testing.assert_allclose(dj.cdist(_t(a), _t(b), p=1).numpy(), np.abs(diff).sum(-1),
                               rtol=1e-12)
    np.testing.assert_allclose(dj.cdist(_t(a), _t(b), p=math.inf).numpy(),
                               np.abs(diff).max(-1), rtol=1e-12)
    cos = (a[:, None] * b[None]).sum(-1) / np.outer(np.linalg.norm(a, axis=1),
                                                    np.linalg.norm(b, axis=1))
    np.testing.assert_allclose(F.cosine_similarity(_t(a[:, None]), _t(b[None]), dim=2).numpy(),
                               cos, rtol=1e-12)
    np.testing.assert_allclose(F.pairwise_distance(_t(a), _t(b[:4])).numpy(),
                               np.linalg.norm(a - b[:4] + 1e-6, axis=1), rtol=1e-12)


def test_cdist_gradient_at_zero_distance_is_zero():
    a = _t([[1.0, 2.0]], grad=True)
    dj.cdist(a, _t([[1.0, 2.0], [1.0, 3.0]])).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [[0.0, -1.0]])


def test_losses_against_numpy():
    x, y = _r(3, 4) * 2, _r(3, 4)
    d = np.abs(x - y)
    assert F.smooth_l1_loss(_t(x), _t(y), beta=0.5).item() == pytest.approx(
        np.where(d < 0.5, d * d, d - 0.25).mean(), rel=1e-12)
    assert F.huber_loss(_t(x), _t(y), delta=0.5).item() == pytest.approx(
        np.where(d <= 0.5, 0.5 * d * d, 0.5 * (d - 0.25)).mean(), rel=1e-12)
    p = np.array([[0.2, 0.0, 0.8], [0.5, 0.25, 0.25]])
    logq = np.log(np.array([[0.3, 0.3, 0.4], [0.1, 0.6, 0.3]]))
    terms = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1)) - logq), 0)
    assert F.kl_div(_t(logq), _t(p), reduction="batchmean").item() == pytest.approx(
        terms.sum() / 2, rel=1e-12)
    assert F.kl_div(_t(logq), _t(np.log(p + 0.1)), reduction="sum",
                    log_target=True).item() == pytest.approx(
        ((p + 0.1) * (np.log(p + 0.1) - logq)).sum(), rel=1e-12)
    target = np.array([1, -1, 1])
    cos = (x * y).sum(1) / np.sqrt((x * x).sum(1) * (y * y).sum(1))
    want = np.where(target == 1, 1 - cos, np.maximum(cos - 0.1, 0)).sum()
    assert F.cosine_embedding_loss(_t(x), _t(y), dj.tensor(target), 0.1,
                                   reduction="sum").item() == pytest.approx(want, rel=1e-10)


def test_pool1d_against_numpy():
    x = _r(2, 3, 7)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1)))
    want = np.stack([padded[..., i:i + 3].mean(-1) for i in range(0, 7, 2)], -1)
    np.testing.assert_allclose(F.avg_pool1d(_t(x), 3, 2, 1).numpy(), want, rtol=1e-12)
    want = np.stack([x[..., i:i + 2].max(-1) for i in range(0, 6, 2)], -1)
    np.testing.assert_allclose(dj.nn.MaxPool1d(2)(_t(x)).numpy(), want)
    assert dj.nn.AvgPool1d(2)(_t(x[0])).shape == (3, 3)  # unbatched


def test_embedding_bag_against_loops():
    weight = _r(10, 3)
    idx, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 9]), [0, 4, 4, 6]
    bags = [idx[0:4], idx[4:4], idx[4:6], idx[6:]]
    for mode, reduce in (("sum", np.sum), ("mean", np.mean), ("max", np.max)):
        got = F.embedding_bag(dj.tensor(idx), _t(weight), dj.tensor(offsets), mode=mode).numpy()
        want = [reduce(weight[b], 0) if len(b) else np.zeros(3) for b in bags]
        np.testing.assert_allclose(got, want, rtol=1e-12)
    got = F.embedding_bag(dj.tensor([[1, 2, 0], [0, 0, 3]]), _t(weight), padding_idx=0).numpy()
    np.testing.assert_allclose(got, [weight[[1, 2]].mean(0), weight[3]], rtol=1e-12)
    with pytest.raises(ValueError, match="offsets"):
        F.embedding_bag(dj.tensor(idx), _t(weight))


GRADCHECKS = {
    "conv_transpose2d": (lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1,
                                                         output_padding=1, dilation=(1, 2)),
                         [_r(1, 2, 3, 2), _r(2, 2, 2, 2)]),
    "fold": (lambda c: F.fold(c, (4, 4), 2, stride=2), [_r(1, 8, 4)]),
    "unfold": (lambda x: F.unfold(x, 2, dilation=2, padding=1), [_r(1, 2, 3, 3)]),
    "group_norm": (lambda x, w: F.group_norm(x, 2, w), [_r(2, 4, 3), _r(4)]),
    "instance_norm": (lambda x: F.instance_norm(x), [_r(2, 2, 5)]),
    "pixel_shuffle": (lambda x: F.pixel_shuffle(x, 2) * x.sum(), [_r(1, 4, 2, 2)]),
    "cdist": (lambda a, b: dj.cdist(a, b, p=3), [_r(3, 2), _r(4, 2)]),
    "cosine_similarity": (lambda a, b: F.cosine_similarity(a, b), [_r(3, 4), _r(3, 4)]),
    "kl_div": (lambda a, b: F.kl_div(F.log_softmax(a, 1), F.softmax(b, 1)), [_r(2, 3),
                                                                            _r(2, 3)]),
    "cosine_embedding_loss": (lambda a, b: F.cosine_embedding_loss(
        a, b, dj.tensor([1, -1, -1]), -0.9), [_r(3, 4), _r(3, 4)]),
    "smooth_l1": (lambda a, b: F.smooth_l1_loss(a, b, beta=0.1), [_r(3, 4), _r(3, 4) + 0.02]),
    "embedding_bag": (lambda w: F.embedding_bag(dj.tensor([0, 2, 1, 2]), w, dj.tensor([0, 1]),
                                                mode="max"), [_r(3, 2)]),
}


@pytest.mark.parametrize("name", sorted(GRADCHECKS))
def test_float64_gradients(name):
    fn, arrays = GRADCHECKS[name]
    assert gradcheck(fn, [_t(a, grad=True) for a in arrays])


STATIC = {
    "conv_transpose2d": (lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=1),
                         [_r(2, 2, 3, 3), _r(2, 3, 2, 2)]),
    "unfold": (lambda x: F.unfold(x, 2, dilation=2), [_r(2, 2, 4, 4)]),
    "group_norm": (lambda x: F.group_norm(x, 2), [_r(2, 4, 3)]),
    "pixel_unshuffle": (lambda x: F.pixel_unshuffle(x, 2), [_r(2, 1, 4, 4)]),
    "cdist": (lambda a, b: dj.cdist(a, b), [_r(3, 2), _r(4, 2)]),
    "kl_div": (lambda a, b: F.kl_div(a, b, reduction="batchmean"), [_r(3, 4), np.abs(_r(3, 4))]),
    "reflect_pad": (lambda x: dj.nn.ReflectionPad2d(1)(x), [_r(1, 1, 3, 3)]),
}


@pytest.mark.parametrize("name", sorted(STATIC))
def test_static_graph_and_jit_agree_with_eager(name):
    fn, arrays = STATIC[name]
    eager = fn(*[_t(a) for a in arrays]).numpy()
    g = dj.Graph()
    with g.as_default():
        holders = [dj.placeholder(a.shape, dj.float64) for a in arrays]
        out = fn(*holders)
    for level in (0, 2):
        got = dj.Session(g, optimize=level).run(out, dict(zip(holders, arrays)))
        np.testing.assert_allclose(got, eager, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dj.jit(fn)(*[_t(a) for a in arrays]).numpy(), eager,
                               rtol=1e-12, atol=1e-14)


def test_transformer_shapes_names_and_training_step():
    dj.manual_seed(0)
    model = dj.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                              dim_feedforward=16, dropout=0.0, batch_first=True)
    names = set(model.state_dict())
    assert {"decoder.layers.0.multihead_attn.in_proj_weight", "decoder.layers.0.norm3.weight",
            "encoder.norm.weight", "decoder.norm.bias"} <= names
    src, tgt = dj.randn(2, 5, 8), dj.randn(2, 3, 8)
    mask = dj.nn.Transformer.generate_square_subsequent_mask(3)
    assert np.isneginf(mask.numpy()[0, 1]) and mask.numpy()[1, 0] == 0
    out = model(src, tgt, tgt_mask=mask)
    assert out.shape == (2, 3, 8)
    out.sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    # the first target position attends only to itself: later target positions don't change it
    changed = tgt.numpy().copy()
    changed[:, 2] += 1.0
    again = model(src, dj.tensor(changed), tgt_mask=mask)
    np.testing.assert_allclose(again.detach().numpy()[:, 0], out.detach().numpy()[:, 0],
                               rtol=1e-5)
