"""Layers and functions added for PyTorch programs: against hand-derived values always, and
against PyTorch (outputs and gradients) where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing.errors import ShapeError

RNG = np.random.default_rng(0)


def _x(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# --- hand-derived ----------------------------------------------------------------------------
def test_max_pool_gives_a_tied_window_gradient_to_its_first_maximum():
    x = dj.ones(1, 1, 4, 4, requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    want = np.zeros((4, 4), np.float32)
    want[::2, ::2] = 1.0  # the top-left of each 2x2 window
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], want)
    y = dj.tensor([[[[1.0, 3.0], [3.0, 2.0]]]], requires_grad=True)
    F.max_pool2d(y, 2).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy()[0, 0], [[0, 1], [0, 0]])


def test_ignore_index_and_class_weights_by_hand():
    logits = _x(4, 3).astype(np.float64)
    target = np.array([0, 2, -100, 1])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    kept = [0, 1, 3]
    want = -np.mean([logp[i, target[i]] for i in kept])
    got = F.cross_entropy(dj.tensor(logits), dj.tensor(target))
    np.testing.assert_allclose(got.item(), want, rtol=1e-10)
    w = np.array([1.0, 2.0, 0.5])
    want_w = -sum(w[target[i]] * logp[i, target[i]] for i in kept) / sum(w[target[i]] for i in kept)
    got_w = F.nll_loss(dj.tensor(logp), dj.tensor(target), weight=dj.tensor(w))
    np.testing.assert_allclose(got_w.item(), want_w, rtol=1e-10)
    got_i = F.cross_entropy(dj.tensor(logits), dj.tensor(target + 100 * (target < 0) - 0),
                            ignore_index=0, reduction="sum")
    np.testing.assert_allclose(got_i.item(), -sum(logp[i, t] for i, t in
                                                   enumerate([0, 2, 0, 1]) if t != 0), rtol=1e-10)
    with pytest.raises(TypeError, match="reduction= by keyword"):
        F.cross_entropy(dj.tensor(logits), dj.tensor(target), "sum")


def test_ignore_index_in_a_static_graph():
    logits, target = _x(4, 3), np.array([0, 2, -100, 1])
    eager = F.cross_entropy(dj.tensor(logits), dj.tensor(target)).item()
    with dj.Graph() as g:
        z = dj.placeholder((None, 3))
        y = dj.placeholder((None,), dj.int64)
        loss = F.cross_entropy(z, y)
    np.testing.assert_allclose(dj.Session(g).run(loss, {z: logits, y: target}), eager, rtol=1e-6)


def test_dropout2d_drops_whole_channels():
    dj.manual_seed(0)
    out = nn.Dropout2d(0.5)(dj.ones(4, 8, 3, 3)).numpy()
    per_channel = out.reshape(4, 8, 9)
    assert set(np.unique(per_channel)) == {0.0, 2.0}
    assert np.all(per_channel.min(-1) == per_channel.max(-1))
    evaluated = nn.Dropout2d(0.5).eval()(dj.ones(1, 2, 2, 2)).numpy()
    assert np.array_equal(evaluated, np.ones((1, 2, 2, 2)))


def test_normalize_of_a_zero_vector_has_a_finite_gradient():
    x = dj.tensor([[0.0, 0.0], [3.0, 4.0]], requires_grad=True)
    out = F.normalize(x, dim=1)
    np.testing.assert_allclose(out.numpy(), [[0, 0], [0.6, 0.8]], rtol=1e-6)
    out.sum().backward()
    assert np.all(np.isfinite(x.grad.numpy()))


def test_clip_grad_norm_and_value_by_hand():
    a, b = dj.nn.Parameter(np.zeros(2, np.float32)), dj.nn.Parameter(np.zeros(1, np.float32))
    a.grad, b.grad = dj.tensor([3.0, 0.0]), dj.tensor([4.0])
    held = a.grad
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    np.testing.assert_allclose(total.item(), 5.0)
    np.testing.assert_allclose(held.numpy(), [0.6, 0.0], rtol=1e-5)  # in place, as PyTorch
    np.testing.assert_allclose(b.grad.numpy(), [0.8], rtol=1e-5)
    nn.utils.clip_grad_value_([a, b], 0.7)
    np.testing.assert_allclose(np.concatenate([a.grad.numpy(), b.grad.numpy()]), [0.6, 0, 0.7],
                               rtol=1e-6)
    assert nn.utils.clip_grad_norm_(a, 10.0, norm_type="inf").item() == pytest.approx(0.6)


def test_clip_grad_norm_inside_a_jitted_step_equals_eager():
    def make():
        dj.manual_seed(0)
        model = nn.Linear(3, 2)
        return model, dj.optim.SGD(model.parameters(), lr=0.5)

    def step_fn(model, opt):
        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y) * 100.0
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            return loss
        return step

    (m1, o1), (m2, o2) = make(), make()
    eager, jitted = step_fn(m1, o1), dj.jit(step_fn(m2, o2))
    for _ in range(3):
        x, y = dj.tensor(_x(4, 3)), dj.tensor(_x(4, 2))
        np.testing.assert_allclose(jitted(x, y).item(), eager(x, y).item(), rtol=1e-5)
    np.testing.assert_allclose(m2.weight.numpy(), m1.weight.numpy(), rtol=1e-5)


def test_pad_errors_and_graph_mode():
    with pytest.raises(ShapeError, match="reflect padding"):
        F.pad(dj.ones(1, 1, 2, 2), (2, 2, 0, 0), mode="reflect")
    with dj.Graph() as g:
        x = dj.placeholder((None, 3))
        y = F.pad(x, (1, 2), value=-1.0)
    assert y.shape == (None, 6)
    np.testing.assert_array_equal(dj.Session(g).run(y, {x: np.ones((2, 3), np.float32)}),
                                  [[-1, 1, 1, 1, -1, -1]] * 2)


def test_transformer_encoder_copies_are_independent():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2)
    w0, w1 = enc.layers[0].linear1.weight, enc.layers[1].linear1.weight
    assert w0 is not w1 and np.array_equal(w0.numpy(), w1.numpy())
    assert enc(dj.randn(5, 3, 8)).shape == (5, 3, 8)


# --- against PyTorch ------------------------------------------------------------------------
torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _compare(ours_fn, theirs_fn, *arrays, rtol=1e-5, atol=1e-6):
    """Outputs and input gradients (of a weighted sum) agree."""
    ours_in = [dj.tensor(a, requires_grad=True) for a in arrays]
    theirs_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, tout = ours_fn(*ours_in), theirs_fn(*theirs_in)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=rtol, atol=atol)
    w = RNG.standard_normal(tout.shape).astype(np.float32)
    (out * dj.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for a, b in zip(ours_in, theirs_in):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol * 10, atol=atol * 10)


def _load(ours, theirs):
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})


FUNCTIONS = [
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2)),
    ("silu", F.silu, TF.silu),
    ("elu", F.elu, TF.elu),
    ("gelu", F.gelu, TF.gelu),
    ("normalize", lambda x: F.normalize(x, dim=-1), lambda x: TF.normalize(x, dim=-1)),
    ("normalize-p1", lambda x: F.normalize(x, p=1, dim=1), lambda x: TF.normalize(x, p=1, dim=1)),
    ("pad-constant", lambda x: F.pad(x, (1, 2, 0, 1), value=0.5),
     lambda x: TF.pad(x, (1, 2, 0, 1), value=0.5)),
    ("pad-crop", lambda x: F.pad(x, (-1, 1)), lambda x: TF.pad(x, (-1, 1))),
    ("pad-reflect", lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"),
     lambda x: TF.pad(x, (2, 1, 1, 2), mode="reflect")),
    ("pad-replicate", lambda x: F.pad(x, (2, 1, 3, 0), mode="replicate"),
     lambda x: TF.pad(x, (2, 1, 3, 0), mode="replicate")),
    ("pad-circular", lambda x: F.pad(x, (2, 1, 1, 2), mode="circular"),
     lambda x: TF.pad(x, (2, 1, 1, 2), mode="circular")),
    ("nearest", lambda x: F.interpolate(x, scale_factor=2), lambda x: TF.interpolate(
        x, scale_factor=2)),
    ("nearest-size", lambda x: F.interpolate(x, size=(3, 7)), lambda x: TF.interpolate(
        x, size=(3, 7))),
    ("bilinear", lambda x: F.interpolate(x, scale_factor=1.5, mode="bilinear"),
     lambda x: TF.interpolate(x, scale_factor=1.5, mode="bilinear")),
    ("bilinear-corners", lambda x: F.interpolate(x, size=(2, 9), mode="bilinear",
                                                 align_corners=True),
     lambda x: TF.interpolate(x, size=(2, 9), mode="bilinear", align_corners=True)),
    ("adaptive-avg", lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
     lambda x: TF.adaptive_avg_pool2d(x, (3, 2))),
    ("max-pool", lambda x: F.max_pool2d(x, 2, 1, 1), lambda x: TF.max_pool2d(x, 2, 1, 1)),
]


@pytest.mark.parametrize("name,ours,theirs", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_functions_equal_pytorch(name, ours, theirs):
    _compare(ours, theirs, _x(2, 3, 5, 4))


def test_max_pool_ties_equal_pytorch():
    x = np.round(_x(2, 2, 6, 6))  # many ties
    _compare(lambda t: F.max_pool2d(t, 3, 2, 1), lambda t: TF.max_pool2d(t, 3, 2, 1), x)


def test_losses_equal_pytorch():
    p = 1 / (1 + np.exp(-_x(4, 3)))
    t = (RNG.random((4, 3)) > 0.5).astype(np.float32)
    w = RNG.random((4, 3)).astype(np.float32)
    _compare(lambda a: F.binary_cross_entropy(a, dj.tensor(t), dj.tensor(w)),
             lambda a: TF.binary_cross_entropy(a, torch.tensor(t), torch.tensor(w)), p)
    _compare(lambda a: F.binary_cross_entropy_with_logits(a, dj.tensor(t), dj.tensor(w),
                                                          pos_weight=dj.tensor([1.0, 2.0, 3.0])),
             lambda a: TF.binary_cross_entropy_with_logits(a, torch.tensor(t), torch.tensor(w),
                                                           pos_weight=torch.tensor([1., 2., 3.])),
             _x(4, 3))
    y = np.array([[0, 2, 1], [1, -100, 3], [3, 3, -100], [0, 1, 2]])  # (N, d1) targets
    cw = np.array([1.0, 0.5, 2.0, 1.5], np.float32)
    for kwargs in (dict(), dict(reduction="sum"), dict(reduction="none")):
        _compare(lambda a, kw=kwargs: F.cross_entropy(a, dj.tensor(y), dj.tensor(cw), **kw),
                 lambda a, kw=kwargs: TF.cross_entropy(a, torch.tensor(y), torch.tensor(cw),
                                                       **kw),
                 _x(4, 4, 3))
    y3 = np.where(y < 0, 3, y)
    _compare(lambda a: F.cross_entropy(a, dj.tensor(y3), ignore_index=3, label_smoothing=0.1),
             lambda a: TF.cross_entropy(a, torch.tensor(y3), ignore_index=3,
                                        label_smoothing=0.1), _x(4, 4, 3))


def test_conv1d_equals_pytorch():
    theirs, ours = torch.nn.Conv1d(3, 4, 3, stride=2, padding=1), nn.Conv1d(3, 4, 3, 2, 1)
    _load(ours, theirs)
    _compare(ours, theirs, _x(2, 3, 9))


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_equals_pytorch(batch_first):
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    ours = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _load(ours, theirs)
    q, kv = _x(5, 3, 8), _x(4, 3, 8)
    if batch_first:
        q, kv = q.transpose(1, 0, 2).copy(), kv.transpose(1, 0, 2).copy()
    mask = np.triu(np.ones((5, 4), bool), 2)
    pad = np.zeros((3, 4), bool)
    pad[1, 3] = True
    for kwargs in (dict(), dict(attn_mask=mask, key_padding_mask=pad),
                   dict(average_attn_weights=False)):
        ok = {k: dj.tensor(v) for k, v in kwargs.items() if k != "average_attn_weights"}
        tk = {k: torch.tensor(v) for k, v in kwargs.items() if k != "average_attn_weights"}
        avg = kwargs.get("average_attn_weights", True)
        _compare(lambda a, b, avg=avg, ok=ok: ours(a, b, b, average_attn_weights=avg, **ok)[0],
                 lambda a, b, avg=avg, tk=tk: theirs(a, b, b, average_attn_weights=avg,
                                                     **tk)[0], q, kv)
        weights = ours(dj.tensor(q), dj.tensor(kv), dj.tensor(kv), average_attn_weights=avg,
                       **ok)[1]
        tweights = theirs(torch.tensor(q), torch.tensor(kv), torch.tensor(kv),
                          average_attn_weights=avg, **tk)[1]
        np.testing.assert_allclose(weights.numpy(), tweights.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_transformer_encoder_layer_equals_pytorch(norm_first, activation):
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation,
                                              norm_first=norm_first, batch_first=True)
    ours = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation,
                                      norm_first=norm_first, batch_first=True)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _load(ours, theirs)
    pad = np.zeros((3, 5), bool)
    pad[0, 4] = True
    _compare(lambda a: ours(a, src_key_padding_mask=dj.tensor(pad)),
             lambda a: theirs(a, src_key_padding_mask=torch.tensor(pad)), _x(3, 5, 8),
             rtol=1e-4, atol=1e-5)


def test_clip_grad_norm_equals_pytorch():
    grads = [_x(3, 2) * 5, _x(4) * 5]
    ours = [dj.nn.Parameter(np.zeros_like(g)) for g in grads]
    theirs = [torch.zeros(g.shape, requires_grad=True) for g in grads]
    for p, q, g in zip(ours, theirs, grads):
        p.grad, q.grad = dj.tensor(g), torch.tensor(g)
    for norm_type in (2.0, 1.0, float("inf")):
        n1 = nn.utils.clip_grad_norm_(ours, 1.5, norm_type)
        n2 = torch.nn.utils.clip_grad_norm_(theirs, 1.5, norm_type)
        np.testing.assert_allclose(n1.item(), n2.item(), rtol=1e-5)
        for p, q in zip(ours, theirs):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5)


def test_attention_and_recurrent_dropout_in_graphs_and_jit_equal_eager():
    dj.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
    x_np = _x(3, 5, 8)
    eager = layer(dj.tensor(x_np)).numpy()
    with dj.Graph() as g:
        x = dj.placeholder((None, 5, 8))
        out = layer(x)
    np.testing.assert_allclose(dj.Session(g).run(out, {x: x_np}), eager, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dj.jit(layer)(dj.tensor(x_np)).numpy(), eager, rtol=1e-5,
                               atol=1e-6)
    gru = nn.GRU(8, 4, num_layers=2, dropout=0.5)  # training mode: a fresh mask per run
    with dj.Graph() as g:
        x = dj.placeholder((5, None, 8))
        out, _ = gru(x)
    sess = dj.Session(g)
    a, b = (sess.run(out, {x: x_np.transpose(1, 0, 2)}) for _ in range(2))
    assert a.shape == (5, 3, 4) and not np.allclose(a, b)

