"""`nn.functional.multi_head_attention_forward` with PyTorch's parameters and layout (issue 33):
sequence-first tensors, `embed_dim_to_check`, `bias_k`/`bias_v`, `add_zero_attn`, separate
projection weights and `static_k`/`static_v`; against PyTorch (values and gradients), and
without it against `nn.MultiheadAttention`, in a static graph, and for its errors."""

import inspect

import numpy as np
import pytest

import dongjing as dj
from dongjing import nn
from dongjing.errors import ArgumentError, ShapeError
from dongjing.nn import functional as F

# PyTorch's own deprecation note when the case mixes a bool and a float mask, as compared here
pytestmark = pytest.mark.filterwarnings(
    "ignore:Support for mismatched key_padding_mask and attn_mask is deprecated:UserWarning")

RNG = np.random.default_rng(3304)
L, S, N, E, H = 3, 4, 2, 8, 2
PYTORCH_ORDER = ["query", "key", "value", "embed_dim_to_check", "num_heads", "in_proj_weight",
                 "in_proj_bias", "bias_k", "bias_v", "add_zero_attn", "dropout_p",
                 "out_proj_weight", "out_proj_bias", "training", "key_padding_mask",
                 "need_weights", "attn_mask", "use_separate_proj_weight", "q_proj_weight",
                 "k_proj_weight", "v_proj_weight", "static_k", "static_v",
                 "average_attn_weights", "is_causal"]


def r(*shape):
    return RNG.standard_normal(shape)


Q, K, V = r(L, N, E), r(S, N, E), r(S, N, E)
W, B, WO, BO = r(3 * E, E), r(3 * E), r(E, E), r(E)
PADDING = np.zeros((N, S), bool)
PADDING[0, -1] = True
CAUSAL = np.triu(np.ones((L, S), bool), 1)

CASES = {
    "plain": {},
    "bias_kv": dict(bias_k=r(1, 1, E), bias_v=r(1, 1, E)),
    "zero_attn": dict(add_zero_attn=True),
    "masks": dict(key_padding_mask=PADDING, attn_mask=r(L, S)),
    "bool_3d_mask_causal": dict(attn_mask=np.broadcast_to(CAUSAL, (N * H, L, S)).copy(),
                                is_causal=True),
    "all_extras": dict(bias_k=r(1, 1, E), bias_v=r(1, 1, E), add_zero_attn=True,
                       key_padding_mask=PADDING, attn_mask=CAUSAL),
    "per_head": dict(average_attn_weights=False),
    "no_weights": dict(need_weights=False),
    "separate": dict(use_separate_proj_weight=True, in_proj_weight=None,
                     q_proj_weight=r(E, E), k_proj_weight=r(E, 5), v_proj_weight=r(E, 6),
                     key=r(S, N, 5), value=r(S, N, 6)),
    "static": dict(static_k=r(N * H, 5, E // H), static_v=r(N * H, 5, E // H)),
    "unbatched": dict(query=r(L, E), key=r(S, E), value=r(S, E),
                      key_padding_mask=np.array([False, False, True, False])),
}


def _call(module_f, tensor, case):
    args = dict(query=Q, key=K, value=V, embed_dim_to_check=E, num_heads=H, in_proj_weight=W,
                in_proj_bias=B, bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0.0,
                out_proj_weight=WO, out_proj_bias=BO)
    args.update(CASES[case])
    kw = {k: tensor(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}
    positional = [kw.pop(name) for name in PYTORCH_ORDER[:13]]
    return module_f.multi_head_attention_forward(*positional, **kw), kw


def test_the_signature_is_pytorchs():
    assert list(inspect.signature(F.multi_head_attention_forward).parameters) == PYTORCH_ORDER


@pytest.mark.parametrize("case", list(CASES))
def test_values_and_gradients_agree_with_pytorch(case):
    torch = pytest.importorskip("torch")
    import torch.nn.functional as tF

    (ours, our_weights), _ = _call(F, dj.tensor, case)
    (theirs, their_weights), _ = _call(tF, torch.tensor, case)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=1e-12)
    assert (our_weights is None) == (their_weights is None)
    if our_weights is not None:
        np.testing.assert_allclose(our_weights.detach().numpy(),
                                   their_weights.detach().numpy(), atol=1e-12)


def test_gradients_of_the_projection_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as tF

    ours = [dj.tensor(a, requires_grad=True) for a in (Q, W, r(1, 1, E))]
    theirs = [torch.tensor(a.numpy(), requires_grad=True) for a in ours]
    for lib, (q, w, bk), t in ((F, ours, dj.tensor), (tF, theirs, torch.tensor)):
        out, _ = lib.multi_head_attention_forward(
            q, t(K), t(V), E, H, w, t(B), bk, bk * 0.5, True, 0.0, t(WO), t(BO),
            attn_mask=t(CAUSAL))
        (out * out).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


# --- without PyTorch ----------------------------------------------------------------------------
def test_it_computes_what_multihead_attention_computes():
    dj.manual_seed(0)
    layer = nn.MultiheadAttention(E, H, bias=True)
    q, k, v = dj.tensor(Q), dj.tensor(K), dj.tensor(V)
    expected, expected_weights = layer(q, k, v, key_padding_mask=dj.tensor(PADDING))
    got, weights = F.multi_head_attention_forward(
        q, k, v, E, H, layer.in_proj_weight, layer.in_proj_bias, None, None, False, 0.0,
        layer.out_proj.weight, layer.out_proj.bias, key_padding_mask=dj.tensor(PADDING))
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(weights.detach().numpy(), expected_weights.detach().numpy(),
                               atol=1e-12)


def test_a_static_graph_gives_the_eager_values():
    bias_k, bias_v = dj.tensor(r(1, 1, E)), dj.tensor(r(1, 1, E))

    def attend(q):
        return F.multi_head_attention_forward(
            q, dj.tensor(K), dj.tensor(V), E, H, dj.tensor(W), dj.tensor(B), bias_k, bias_v,
            True, 0.0, dj.tensor(WO), dj.tensor(BO), key_padding_mask=dj.tensor(PADDING),
            attn_mask=dj.tensor(CAUSAL))[0]

    eager = attend(dj.tensor(Q)).numpy()
    with dj.Graph() as g:
        q = dj.placeholder((L, N, E), dj.float64)
        out = attend(q)
    for level in (0, 2):
        np.testing.assert_allclose(dj.Session(g, optimize=level).run(out, {q: Q}), eager,
                                   atol=1e-12)
    np.testing.assert_allclose(dj.jit(attend)(dj.tensor(Q)).numpy(), eager, atol=1e-12)


def test_bad_arguments_are_refused_by_name():
    base = [dj.tensor(Q), dj.tensor(K), dj.tensor(V)]
    rest = [dj.tensor(W), dj.tensor(B), None, None, False, 0.0, dj.tensor(WO), dj.tensor(BO)]
    with pytest.raises(ShapeError, match="embedding dimension of 6"):
        F.multi_head_attention_forward(*base, 6, H, *rest)
    with pytest.raises(ArgumentError, match="is_causal"):
        F.multi_head_attention_forward(*base, E, H, *rest, is_causal=True)
    with pytest.raises(ArgumentError, match="q_proj_weight"):
        F.multi_head_attention_forward(*base, E, H, *rest, use_separate_proj_weight=True)
    with pytest.raises(ArgumentError, match="bias_k and bias_v"):
        F.multi_head_attention_forward(*base, E, H, rest[0], rest[1], dj.tensor(r(1, 1, E)),
                                       None, *rest[4:])
    with pytest.raises(ShapeError, match="static_k"):
        F.multi_head_attention_forward(*base, E, H, *rest, static_k=dj.tensor(r(3, 4, 4)))
