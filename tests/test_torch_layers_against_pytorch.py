"""The layers and losses of issue 33 against PyTorch: values and input/parameter gradients in
float64 on the same inputs and weights (skipped where PyTorch is not installed)."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)


def _r(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, shape)


def _compare(run, arrays, rtol=1e-9, atol=1e-11, grads=True):
    """run(F, nn, tensors) on dongjing and on PyTorch; compare values and the gradients of a
    random weighting of the output."""
    ours = [dj.tensor(a, requires_grad=grads and a.dtype.kind == "f") for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grads and a.dtype.kind == "f") for a in arrays]
    out = run(dj.nn.functional, dj, ours)
    ref = run(torch.nn.functional, torch, theirs)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=rtol, atol=atol)
    if not grads:
        return
    weight = RNG.uniform(-1, 1, ref.shape)
    (out * dj.tensor(weight)).sum().backward()
    (ref * torch.tensor(weight)).sum().backward()
    for o, t in zip(ours, theirs):
        if t.grad is not None:
            np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol)


FUNCTIONAL = {
    "conv_transpose2d": (lambda F, m, t: F.conv_transpose2d(t[0], t[1], t[2], stride=2,
                                                            padding=1, output_padding=1),
                         [_r(2, 3, 4, 5), _r(3, 2, 3, 3), _r(2)]),
    "conv_transpose2d_groups_dilation": (
        lambda F, m, t: F.conv_transpose2d(t[0], t[1], None, stride=(1, 2), padding=(2, 0),
                                           groups=2, dilation=2),
        [_r(1, 4, 5, 4), _r(4, 3, 3, 2)]),
    "conv_transpose1d": (lambda F, m, t: F.conv_transpose1d(t[0], t[1], t[2], stride=3,
                                                            padding=1, output_padding=2),
                         [_r(2, 3, 6), _r(3, 4, 4), _r(4)]),
    "unfold": (lambda F, m, t: F.unfold(t[0], (2, 3), dilation=(2, 1), padding=1, stride=(1, 2)),
               [_r(2, 3, 5, 6)]),
    "fold": (lambda F, m, t: F.fold(t[0], (5, 6), (2, 3), dilation=(2, 1), padding=1,
                                    stride=(1, 2)), [_r(2, 18, 15)]),
    "group_norm": (lambda F, m, t: F.group_norm(t[0], 2, t[1], t[2]),
                   [_r(3, 4, 5, 2), _r(4), _r(4)]),
    "instance_norm": (lambda F, m, t: F.instance_norm(t[0], weight=t[1], bias=t[2]),
                      [_r(2, 3, 4, 5), _r(3), _r(3)]),
    "pixel_shuffle": (lambda F, m, t: F.pixel_shuffle(t[0], 2), [_r(2, 8, 3, 4)]),
    "pixel_unshuffle": (lambda F, m, t: F.pixel_unshuffle(t[0], 2), [_r(1, 2, 4, 6)]),
    "reflect_pad": (lambda F, m, t: F.pad(t[0], (1, 2, 2, 1), mode="reflect"), [_r(1, 2, 4, 5)]),
    "cosine_similarity": (lambda F, m, t: F.cosine_similarity(t[0], t[1], dim=1),
                          [_r(4, 5), _r(1, 5)]),
    "pairwise_distance": (lambda F, m, t: F.pairwise_distance(t[0], t[1], p=3),
                          [_r(4, 5), _r(4, 5)]),
    "cdist": (lambda F, m, t: m.cdist(t[0], t[1]), [_r(4, 3), _r(5, 3)]),
    "cdist_p1_batched": (lambda F, m, t: m.cdist(t[0], t[1], p=1), [_r(2, 4, 3), _r(2, 5, 3)]),
    "cdist_inf": (lambda F, m, t: m.cdist(t[0], t[1], p=float("inf")), [_r(4, 3), _r(5, 3)]),
    "kl_div": (lambda F, m, t: F.kl_div(F.log_softmax(t[0], 1), F.softmax(t[1], 1),
                                        reduction="batchmean"), [_r(3, 5), _r(3, 5)]),
    "kl_div_log_target": (lambda F, m, t: F.kl_div(t[0], t[1], reduction="sum",
                                                   log_target=True), [_r(3, 5), _r(3, 5)]),
    "smooth_l1_loss": (lambda F, m, t: F.smooth_l1_loss(t[0] * 2, t[1], beta=0.5),
                       [_r(4, 5), _r(4, 5)]),
    "huber_loss": (lambda F, m, t: F.huber_loss(t[0] * 2, t[1], reduction="none", delta=0.7),
                   [_r(4, 5), _r(4, 5)]),
    "cosine_embedding_loss": (
        lambda F, m, t: F.cosine_embedding_loss(t[0], t[1], t[2], margin=0.1),
        [_r(4, 5), _r(4, 5), np.array([1, -1, -1, 1])]),
    "avg_pool1d": (lambda F, m, t: F.avg_pool1d(t[0], 3, 2, 1), [_r(2, 3, 8)]),
    "max_pool1d": (lambda F, m, t: F.max_pool1d(t[0], 2), [_r(2, 3, 8)]),
    "embedding_bag_mean": (lambda F, m, t: F.embedding_bag(t[0], t[1], t[2], mode="mean"),
                           [np.array([1, 2, 4, 5, 4, 3, 2, 9]), _r(10, 3), np.array([0, 4, 4])]),
    "embedding_bag_sum_weights": (
        lambda F, m, t: F.embedding_bag(t[0], t[1], mode="sum", per_sample_weights=t[2]),
        [np.array([[1, 2, 4], [5, 4, 3]]), _r(10, 3), _r(2, 3)]),
    "embedding_bag_max_padding": (
        lambda F, m, t: F.embedding_bag(t[0], t[1], t[2], mode="max", padding_idx=2),
        [np.array([1, 2, 4, 5, 2, 2]), _r(10, 3), np.array([0, 3, 4])]),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONAL))
def test_functional_matches_pytorch(name):
    run, arrays = FUNCTIONAL[name]
    _compare(run, arrays)


def _copy_parameters(ours, theirs):
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    ours.load_state_dict({k: dj.tensor(v) for k, v in state.items()})


MODULES = {
    "ConvTranspose2d": (lambda nn: nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1,
                                                      dtype=_dtype(nn)), (2, 3, 4, 4)),
    "ConvTranspose1d": (lambda nn: nn.ConvTranspose1d(3, 2, 2, stride=2, dtype=_dtype(nn)),
                        (2, 3, 5)),
    "GroupNorm": (lambda nn: nn.GroupNorm(2, 4, dtype=_dtype(nn)), (2, 4, 3)),
    "InstanceNorm2d": (lambda nn: nn.InstanceNorm2d(3, affine=True, dtype=_dtype(nn)),
                       (2, 3, 4, 4)),
    "InstanceNorm1d_unbatched": (lambda nn: nn.InstanceNorm1d(3), (3, 6)),
    "PixelShuffle": (lambda nn: nn.PixelShuffle(3), (1, 9, 2, 2)),
    "ReflectionPad2d": (lambda nn: nn.ReflectionPad2d((1, 0, 2, 1)), (1, 2, 3, 3)),
    "ReplicationPad1d": (lambda nn: nn.ReplicationPad1d(2), (2, 3)),
    "ZeroPad2d": (lambda nn: nn.ZeroPad2d(1), (1, 1, 2, 2)),
    "ConstantPad1d": (lambda nn: nn.ConstantPad1d((2, 1), 3.5), (2, 3)),
    "Unfold": (lambda nn: nn.Unfold(2, stride=2), (1, 2, 4, 4)),
    "AvgPool1d": (lambda nn: nn.AvgPool1d(2), (2, 3, 6)),
}


def _dtype(nn):
    return dj.float64 if nn is dj.nn else torch.float64


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_matches_pytorch(name):
    make, shape = MODULES[name]
    torch.manual_seed(0)
    theirs = make(torch.nn).double()
    ours = make(dj.nn).to(dj.float64)
    _copy_parameters(ours, theirs)
    x = _r(*shape)
    _compare(lambda F, m, t: (ours if m is dj else theirs)(t[0]), [x])


def test_transformer_matches_pytorch():
    torch.manual_seed(0)
    kwargs = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                  dim_feedforward=16, dropout=0.0, batch_first=True)
    theirs = torch.nn.Transformer(**kwargs).double()
    ours = dj.nn.Transformer(**kwargs).to(dj.float64)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    _copy_parameters(ours, theirs)
    mask = np.triu(np.full((4, 4), -np.inf), 1)
    np.testing.assert_array_equal(dj.nn.Transformer.generate_square_subsequent_mask(4).numpy(),
                                  torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())
    _compare(lambda F, m, t: (ours if m is dj else theirs)(
        t[0], t[1], tgt_mask=m.tensor(mask)), [_r(2, 5, 8), _r(2, 4, 8)], rtol=1e-8, atol=1e-10)


def test_decoder_norm_first_matches_pytorch():
    torch.manual_seed(1)
    make = lambda nn: nn.TransformerDecoder(  # noqa: E731
        nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=True),
        num_layers=2, norm=nn.LayerNorm(8))
    theirs, ours = make(torch.nn).double(), make(dj.nn).to(dj.float64)
    _copy_parameters(ours, theirs)
    _compare(lambda F, m, t: (ours if m is dj else theirs)(t[0], t[1]),
             [_r(3, 2, 8), _r(4, 2, 8)], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_module_matches_pytorch(mode):
    torch.manual_seed(2)
    theirs = torch.nn.EmbeddingBag(6, 3, mode=mode, include_last_offset=True).double()
    ours = dj.nn.EmbeddingBag(6, 3, mode=mode, include_last_offset=True, dtype=dj.float64)
    _copy_parameters(ours, theirs)
    idx, offsets = np.array([0, 5, 3, 3, 1]), np.array([0, 2, 2, 5])
    out = ours(dj.tensor(idx), dj.tensor(offsets))
    ref = theirs(torch.tensor(idx), torch.tensor(offsets))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-12)


def test_instance_norm_running_stats_match_pytorch():
    theirs = torch.nn.InstanceNorm1d(3, track_running_stats=True, momentum=0.3).double()
    ours = dj.nn.InstanceNorm1d(3, track_running_stats=True, momentum=0.3, dtype=dj.float64)
    x = _r(4, 3, 5)
    for _ in range(2):
        ours(dj.tensor(x))
        theirs(torch.tensor(x))
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(ours, name).numpy(),
                                   getattr(theirs, name).numpy(), rtol=1e-12)
    ours.eval()
    theirs.eval()
    np.testing.assert_allclose(ours(dj.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(),
                               rtol=1e-10)


def test_module_losses_match_pytorch():
    a, b = _r(3, 4), _r(3, 4)
    for make in (lambda nn: nn.SmoothL1Loss(beta=0.3), lambda nn: nn.HuberLoss(delta=0.2),
                 lambda nn: nn.KLDivLoss(reduction="batchmean", log_target=True)):
        got = make(dj.nn)(dj.tensor(a), dj.tensor(b)).item()
        want = make(torch.nn)(torch.tensor(a), torch.tensor(b)).item()
        assert got == pytest.approx(want, rel=1e-12)
    y = np.array([1, -1, 1])
    got = dj.nn.CosineEmbeddingLoss(0.2)(dj.tensor(a), dj.tensor(b), dj.tensor(y)).item()
    want = torch.nn.CosineEmbeddingLoss(0.2)(torch.tensor(a), torch.tensor(b),
                                             torch.tensor(y)).item()
    assert got == pytest.approx(want, rel=1e-12)
