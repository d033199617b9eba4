"""`nn.functional.multi_head_attention_forward` as PyTorch has it: sequence-first tensors, its
parameters in its order (`embed_dim_to_check`, `bias_k`/`bias_v`, `add_zero_attn`, separate
projection weights, `static_k`/`static_v`), composed of dongjing ops so it differentiates and
traces."""

from __future__ import annotations

import math

import numpy as np

from .. import ops
from ..errors import ArgumentError, ShapeError
from ..ops.convert import as_tensor
from ..tensor import Tensor
from ..tensor.transfer import constant_like
from .attention_functional import _dropout, _linear, _masked


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
        bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float,
        out_proj_weight: Tensor, out_proj_bias: Tensor | None, training: bool = True,
        key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
        v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
        static_v: Tensor | None = None, average_attn_weights: bool = True,
        is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention of (L, N, E) queries over (S, N, E) keys and values (or unbatched
    (L, E) and (S, E)), as PyTorch's function: returns the (L, N, E) output and the attention
    weights, (N, L, S) averaged over heads or (N, heads, L, S), or None. A bool mask is True
    where attention is NOT allowed; `is_causal` is a hint that `attn_mask` is causal (the mask
    is required, as in PyTorch)."""
    name = "multi_head_attention_forward"
    query, key, value = as_tensor(query), as_tensor(key), as_tensor(value)
    batched = query.ndim == 3
    if not batched:
        query, key, value = (ops.unsqueeze(t, 1) for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = ops.unsqueeze(as_tensor(key_padding_mask), 0)
    if query.ndim != 3 or key.ndim != 3 or value.ndim != 3:
        raise ShapeError(f"{name}: expects (L, N, E) query, key and value (or all unbatched), "
                         f"got {query.shape}, {key.shape} and {value.shape}")
    length, batch, embed = query.shape
    if embed != embed_dim_to_check:
        raise ShapeError(f"{name}: was expecting embedding dimension of {embed_dim_to_check}, "
                         f"but got {embed}")
    if embed % num_heads:
        raise ShapeError(f"{name}: embed_dim {embed} is not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        raise ArgumentError(f"{name}: is_causal is a hint that attn_mask is causal; give the "
                            "mask too (as PyTorch requires)")
    head = embed // num_heads
    q, k, v = _projections(name, query, key, value, embed, in_proj_weight, in_proj_bias,
                           use_separate_proj_weight, q_proj_weight, k_proj_weight,
                           v_proj_weight)
    masks = [None if attn_mask is None else as_tensor(attn_mask),
             None if key_padding_mask is None else as_tensor(key_padding_mask)]
    if (bias_k is None) != (bias_v is None):
        raise ArgumentError(f"{name}: give both bias_k and bias_v, or neither")
    if bias_k is not None:
        if static_k is not None or static_v is not None:
            raise ArgumentError(f"{name}: bias_k/bias_v cannot be added to static_k/static_v")
        k = ops.concat([k, ops.expand(ops.reshape(as_tensor(bias_k), (1, 1, embed)),
                                      1, batch, embed)], 0)
        v = ops.concat([v, ops.expand(ops.reshape(as_tensor(bias_v), (1, 1, embed)),
                                      1, batch, embed)], 0)
        masks = [_one_more_key(m) for m in masks]

    def heads(t: Tensor) -> Tensor:  # (n, N, E) -> (N * heads, n, head_dim)
        return ops.transpose(ops.reshape(t, (t.shape[0], batch * num_heads, head)), 0, 1)

    q = heads(q)
    k = heads(k) if static_k is None else _static(name, "static_k", static_k, batch, num_heads,
                                                  head)
    v = heads(v) if static_v is None else _static(name, "static_v", static_v, batch, num_heads,
                                                  head)
    if add_zero_attn:
        zeros = constant_like(np.zeros((batch * num_heads, 1, head), k.dtype), k)
        k, v = ops.concat([k, zeros], 1), ops.concat([v, zeros], 1)
        masks = [_one_more_key(m) for m in masks]
    source = k.shape[1]
    scores = ops.matmul(q, ops.transpose(k, 1, 2)) * (1.0 / math.sqrt(head))
    scores = ops.reshape(scores, (batch, num_heads, length, source))
    attn, padding = masks
    if attn is not None:
        if attn.ndim == 3:  # (N * heads, L, S)
            attn = ops.reshape(attn, (batch, num_heads, length, source))
        scores = _masked(scores, attn)
    if padding is not None:
        scores = _masked(scores, ops.reshape(padding, (batch, 1, 1, source)))
    weights = ops.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = _dropout(weights, dropout_p, training)
    out = ops.matmul(ops.reshape(weights, (batch * num_heads, length, source)), v)
    out = ops.reshape(ops.transpose(out, 0, 1), (length, batch, embed))
    out = _linear(out, as_tensor(out_proj_weight), out_proj_bias)
    if not batched:
        out = ops.squeeze(out, 1)
    if not need_weights:
        return out, None
    if average_attn_weights:
        weights = ops.mean(weights, 1)
    return out, weights if batched else ops.squeeze(weights, 0)


def _projections(name, query, key, value, embed, in_proj_weight, in_proj_bias, separate,
                 q_proj_weight, k_proj_weight, v_proj_weight):
    biases = [None] * 3 if in_proj_bias is None else \
        [as_tensor(in_proj_bias)[i * embed:(i + 1) * embed] for i in range(3)]
    if separate:
        weights = [q_proj_weight, k_proj_weight, v_proj_weight]
        if any(w is None for w in weights):
            raise ArgumentError(f"{name}: use_separate_proj_weight needs q_proj_weight, "
                                "k_proj_weight and v_proj_weight")
    else:
        if in_proj_weight is None:
            raise ArgumentError(f"{name}: in_proj_weight is None (give it, or "
                                "use_separate_proj_weight=True with the three weights)")
        packed = as_tensor(in_proj_weight)
        weights = [packed[i * embed:(i + 1) * embed] for i in range(3)]
    return (_linear(t, as_tensor(w), b) for t, w, b in zip((query, key, value), weights, biases))


def _one_more_key(mask: Tensor | None) -> Tensor | None:
    """`mask` with one more key column, which every query may attend (False / 0.0)."""
    if mask is None:
        return None
    column = constant_like(np.zeros((*mask.shape[:-1], 1), mask.dtype), mask)
    return ops.concat([mask, column], -1)


def _static(name, what, t, batch, num_heads, head) -> Tensor:
    t = as_tensor(t)
    if t.ndim != 3 or t.shape[0] != batch * num_heads or t.shape[2] != head:
        raise ShapeError(f"{name}: expecting {what} of shape ({batch * num_heads}, S, {head}), "
                         f"got {t.shape}")
    return t
