"""Recurrent layers: PyTorch's names and shapes; outputs and gradients equal PyTorch's with a
converted state dict (where torch is installed); a character-level language model trains to the
same losses eagerly, under dj.jit and as a static graph."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing.errors import ShapeError

RNG = np.random.default_rng(0)


def test_parameter_names_and_shapes_follow_pytorch():
    lstm = nn.LSTM(3, 5, num_layers=2, bidirectional=True)
    names = [n for n, _ in lstm.named_parameters()]
    assert names[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert names[4:8] == ["weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse",
                          "bias_hh_l0_reverse"]
    assert lstm.weight_ih_l1.shape == (20, 10)  # 4 gates x 5; input = 2 directions x 5
    assert nn.GRU(3, 5, bias=False).weight_hh_l0.shape == (15, 5)
    assert [n for n, _ in nn.GRU(3, 5, bias=False).named_parameters()] == ["weight_ih_l0",
                                                                           "weight_hh_l0"]
    assert [n for n, _ in nn.LSTMCell(3, 4).named_parameters()] == [
        "weight_ih", "weight_hh", "bias_ih", "bias_hh"]


def test_shapes_batch_first_unbatched_and_initial_state():
    gru = nn.GRU(3, 4, num_layers=2, batch_first=True, bidirectional=True)
    out, h = gru(dj.randn(2, 7, 3))
    assert out.shape == (2, 7, 8) and h.shape == (4, 2, 4)
    out1, h1 = gru(dj.randn(7, 3))  # unbatched
    assert out1.shape == (7, 8) and h1.shape == (4, 4)
    lstm = nn.LSTM(3, 4)
    out, (h, c) = lstm(dj.randn(6, 2, 3), (dj.zeros(1, 2, 4), dj.ones(1, 2, 4)))
    assert out.shape == (6, 2, 4) and c.shape == (1, 2, 4)
    with pytest.raises(ShapeError, match="initial state"):
        lstm(dj.randn(6, 2, 3), (dj.zeros(2, 2, 4), dj.zeros(2, 2, 4)))
    with pytest.raises(ShapeError, match="initial state"):
        lstm(dj.randn(6, 3, 3), (dj.zeros(1, 2, 4), dj.zeros(1, 2, 4)))  # batch 3 vs 2
    with pytest.raises(ShapeError, match="input_size"):
        lstm(dj.randn(6, 2, 5))
    with pytest.raises(NotImplementedError, match="proj_size"):
        nn.LSTM(3, 4, proj_size=2)


def test_last_output_equals_final_hidden_state_and_hand_computed_rnn_step():
    rnn = nn.RNN(2, 3, nonlinearity="relu", bias=False)
    x = RNG.standard_normal((1, 1, 2)).astype(np.float32)
    out, h = rnn(dj.tensor(x))
    want = np.maximum(x[0] @ rnn.weight_ih_l0.numpy().T, 0)  # h_0 = 0
    np.testing.assert_allclose(out.numpy()[0], want, rtol=1e-6)
    out, h = nn.GRU(2, 3)(dj.randn(4, 2, 2))
    np.testing.assert_array_equal(out.numpy()[-1], h.numpy()[0])


def test_dropout_between_layers_only_in_training():
    dj.manual_seed(0)
    lstm = nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = dj.randn(5, 2, 3)
    a, _ = lstm(x)
    b, _ = lstm(x)
    assert not np.allclose(a.numpy(), b.numpy())
    lstm.eval()
    np.testing.assert_array_equal(lstm(x)[0].numpy(), lstm(x)[0].numpy())


def test_static_graph_and_jit_equal_eager():
    dj.manual_seed(1)
    lstm = nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)
    x_np = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    eager, (h, c) = lstm(dj.tensor(x_np))
    with dj.Graph() as g:
        x = dj.placeholder((None, 5, 3), name="x")
        out, (hs, cs) = lstm(x)
    got = dj.Session(g, optimize=2).run([out, cs], {x: x_np})
    np.testing.assert_allclose(got[0], eager.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], c.numpy(), rtol=1e-5, atol=1e-6)
    jitted = dj.jit(lambda t: lstm(t)[0])
    np.testing.assert_allclose(jitted(dj.tensor(x_np)).numpy(), eager.numpy(), rtol=1e-5,
                               atol=1e-6)
    with dj.Graph():
        with pytest.raises(ShapeError, match="sequence length must be known"):
            lstm(dj.placeholder((2, None, 3)))


# --- a character-level language model, three ways ------------------------------------------
TEXT = "hello world, hello dongjing. " * 3
VOCAB = sorted(set(TEXT))
IDS = np.array([VOCAB.index(ch) for ch in TEXT], np.int64)
SEQ = 12


class CharLM(nn.Module):
    def __init__(self, cell: str):
        super().__init__()
        self.embed = nn.Embedding(len(VOCAB), 8)
        self.rnn = getattr(nn, cell)(8, 16, batch_first=True)
        self.head = nn.Linear(16, len(VOCAB))

    def forward(self, x):
        out, _ = self.rnn(self.embed(x))
        return self.head(out)


def _batches():
    starts = [0, 13, 26, 39]
    x = np.stack([IDS[s:s + SEQ] for s in starts])
    y = np.stack([IDS[s + 1:s + SEQ + 1] for s in starts])
    return [(x, y)] * 8


def _loss(model, x, y):
    logits = model(x)
    return F.cross_entropy(dj.reshape(logits, (-1, len(VOCAB))), dj.reshape(y, (-1,)))


def _train(cell: str, mode: str) -> list[float]:
    dj.manual_seed(0)
    model = CharLM(cell)
    opt = dj.optim.Adam(model.parameters(), lr=0.05)
    if mode == "static":
        with dj.Graph() as g:
            x = dj.placeholder((None, SEQ), dj.int64, name="x")
            y = dj.placeholder((None, SEQ), dj.int64, name="y")
            loss = _loss(model, x, y)
            train = opt.minimize(loss)
        sess = dj.Session(g)
        return [float(sess.run([loss, train], {x: bx, y: by})[0]) for bx, by in _batches()]

    def step(bx, by):
        opt.zero_grad()
        loss = _loss(model, bx, by)
        loss.backward()
        opt.step()
        return loss

    step = dj.jit(step) if mode == "jit" else step
    return [step(dj.tensor(bx), dj.tensor(by)).item() for bx, by in _batches()]


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_char_language_model_trains_the_same_eager_jit_and_static(cell):
    eager = _train(cell, "eager")
    assert eager[-1] < 0.7 * eager[0]
    np.testing.assert_allclose(_train(cell, "jit"), eager, rtol=1e-4)
    np.testing.assert_allclose(_train(cell, "static"), eager, rtol=1e-4)


# --- against PyTorch -------------------------------------------------------------------------
CONFIGS = [
    dict(num_layers=1),
    dict(num_layers=2, batch_first=True, bidirectional=True),
    dict(num_layers=2, bias=False),
]


@pytest.mark.parametrize("cell", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("config", CONFIGS, ids=["1-layer", "2-layer-bi-bf", "no-bias"])
def test_outputs_and_gradients_equal_pytorch(cell, config):
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.nn, cell)(3, 4, **config)
    ours = getattr(nn, cell)(3, 4, **config)
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    assert list(ours.state_dict()) == list(state)
    ours.load_state_dict(state)
    x = RNG.standard_normal((2, 5, 3) if config.get("batch_first") else (5, 2, 3))
    x = x.astype(np.float32)
    directions = 2 if config.get("bidirectional") else 1
    h0 = RNG.standard_normal((config["num_layers"] * directions, 2, 4)).astype(np.float32)
    tx, ox = torch.tensor(x, requires_grad=True), dj.tensor(x, requires_grad=True)
    th, oh = torch.tensor(h0), dj.tensor(h0)
    if cell == "LSTM":
        (tout, (thn, _)), (oout, (ohn, _)) = theirs(tx, (th, th * 2)), ours(ox, (oh, oh * 2))
    else:
        (tout, thn), (oout, ohn) = theirs(tx, th), ours(ox, oh)
    weights = RNG.standard_normal(oout.shape).astype(np.float32)
    ((tout * torch.tensor(weights)).sum() + thn.sum()).backward()
    ((oout * dj.tensor(weights)).sum() + ohn.sum()).backward()
    np.testing.assert_allclose(oout.numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ohn.numpy(), thn.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ox.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (name, p), tp in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=name)


@pytest.mark.parametrize("cell", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_equal_pytorch(cell):
    torch = pytest.importorskip("torch")
    theirs, ours = getattr(torch.nn, cell)(3, 4), getattr(nn, cell)(3, 4)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    h = RNG.standard_normal((2, 4)).astype(np.float32)
    hx_t = (torch.tensor(h), torch.tensor(h)) if cell == "LSTMCell" else torch.tensor(h)
    hx_o = (dj.tensor(h), dj.tensor(h)) if cell == "LSTMCell" else dj.tensor(h)
    tout, oout = theirs(torch.tensor(x), hx_t), ours(dj.tensor(x), hx_o)
    tout = tout[0] if cell == "LSTMCell" else tout
    oout = oout[0] if cell == "LSTMCell" else oout
    tout.sum().backward()
    oout.sum().backward()
    np.testing.assert_allclose(oout.numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    for p, tp in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-5)
    unbatched = ours(dj.tensor(x[0]))
    assert (unbatched[0] if cell == "LSTMCell" else unbatched).shape == (4,)
