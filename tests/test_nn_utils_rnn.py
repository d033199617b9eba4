"""`dj.nn.utils.rnn`: padding and packing sequences, and recurrent layers over packed batches
(each sequence stops at its own length); against loops here and against PyTorch if installed."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.nn.utils.rnn import (
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)

RNG = np.random.default_rng(5)
SEQS = [RNG.uniform(-1, 1, (n, 3)) for n in (2, 4, 1)]


def _t(a, grad=False):
    return dj.tensor(np.asarray(a, np.float64), requires_grad=grad)


def test_pad_sequence_both_layouts_and_sides():
    out = pad_sequence([_t(s) for s in SEQS], padding_value=-1.0).numpy()
    assert out.shape == (4, 3, 3)
    np.testing.assert_array_equal(out[:2, 0], SEQS[0])
    np.testing.assert_array_equal(out[2:, 0], -1.0)
    left = pad_sequence([_t(s) for s in SEQS], batch_first=True, padding_side="left").numpy()
    np.testing.assert_array_equal(left[2, 3], SEQS[2][0])
    np.testing.assert_array_equal(left[2, :3], 0.0)


def test_pack_layout_and_round_trip():
    packed = pack_sequence([_t(s) for s in SEQS], enforce_sorted=False)
    assert isinstance(packed, PackedSequence)
    np.testing.assert_array_equal(packed.batch_sizes.numpy(), [3, 2, 1, 1])
    np.testing.assert_array_equal(packed.sorted_indices.numpy(), [1, 0, 2])
    rows = [SEQS[1][0], SEQS[0][0], SEQS[2][0], SEQS[1][1], SEQS[0][1], SEQS[1][2], SEQS[1][3]]
    np.testing.assert_array_equal(packed.data.numpy(), rows)
    padded, lengths = pad_packed_sequence(packed, batch_first=True, total_length=5)
    assert padded.shape == (3, 5, 3)
    np.testing.assert_array_equal(lengths.numpy(), [2, 4, 1])
    for b, s in enumerate(SEQS):
        np.testing.assert_array_equal(padded.numpy()[b, :len(s)], s)
        np.testing.assert_array_equal(padded.numpy()[b, len(s):], 0.0)
    for got, s in zip(unpack_sequence(packed), SEQS):
        np.testing.assert_array_equal(got.numpy(), s)
    for got, s in zip(unpad_sequence(padded, lengths, batch_first=True), SEQS):
        np.testing.assert_array_equal(got.numpy(), s)
    with pytest.raises(RuntimeError, match="enforce_sorted"):
        pack_sequence([_t(s) for s in SEQS])


def test_gradients_flow_through_pack_and_unpack():
    x = _t(RNG.uniform(-1, 1, (3, 2, 2)), grad=True)
    packed = pack_padded_sequence(x, [3, 1])
    padded, _ = pad_packed_sequence(packed)
    (padded * padded).sum().backward()
    want = 2 * x.numpy().copy()
    want[1:, 1] = 0.0  # the padding of the second sequence never reaches the output
    np.testing.assert_allclose(x.grad.numpy(), want)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_packed_recurrence_equals_each_sequence_alone(kind, bidirectional):
    dj.manual_seed(0)
    layer = getattr(dj.nn, kind)(3, 4, num_layers=2, bidirectional=bidirectional).to(dj.float64)
    packed = pack_sequence([_t(s) for s in SEQS], enforce_sorted=False)
    out, h_n = layer(packed)
    assert isinstance(out, PackedSequence)
    padded, lengths = pad_packed_sequence(out, batch_first=True)
    for b, s in enumerate(SEQS):
        alone, h_alone = layer(_t(s))  # unbatched: (L, features)
        np.testing.assert_allclose(padded.numpy()[b, :len(s)], alone.numpy(), rtol=1e-12)
        np.testing.assert_array_equal(padded.numpy()[b, len(s):], 0.0)
        finals = zip(h_n, h_alone) if kind == "LSTM" else [(h_n, h_alone)]
        for batch_state, own in finals:
            np.testing.assert_allclose(batch_state.numpy()[:, b], own.numpy(), rtol=1e-12)


def test_packed_recurrence_matches_pytorch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True).double()
    ours = dj.nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True).to(dj.float64)
    ours.load_state_dict({k: dj.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    padded = np.zeros((3, 4, 3))
    for b, s in enumerate(SEQS):
        padded[b, :len(s)] = s
    lengths = [len(s) for s in SEQS]
    x, tx = _t(padded, grad=True), torch.tensor(padded, requires_grad=True)
    h0 = RNG.uniform(-1, 1, (4, 3, 4))
    out, (h, c) = ours(pack_padded_sequence(x, lengths, batch_first=True,
                                            enforce_sorted=False), (_t(h0), _t(h0)))
    tout, (th, tc) = theirs(torch.nn.utils.rnn.pack_padded_sequence(
        tx, lengths, batch_first=True, enforce_sorted=False),
        (torch.tensor(h0), torch.tensor(h0)))
    np.testing.assert_allclose(out.data.numpy(), tout.data.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(h.numpy(), th.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(c.numpy(), tc.detach().numpy(), rtol=1e-10)
    mine, _ = pad_packed_sequence(out, batch_first=True)
    ref, _ = torch.nn.utils.rnn.pad_packed_sequence(tout, batch_first=True)
    (mine.sum() + h.sum()).backward()
    (ref.sum() + th.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ours.weight_hh_l1_reverse.grad.numpy(),
                               theirs.weight_hh_l1_reverse.grad.numpy(), rtol=1e-10)
