"""Attention as functions (scaled dot-product and the multi-head forward), apart from the
layers in `nn.attention` so that `nn.functional` can offer them without importing modules."""

from __future__ import annotations

import math

import numpy as np

from .. import ops
from ..autocasting import autocast_policy
from ..dtypes import is_floating
from ..errors import DTypeError, ShapeError
from ..ops.convert import as_tensor
from ..ops.nn import dropout_mask
from ..tensor import Tensor
from ..tensor.transfer import constant_like


def _masked(scores: Tensor, mask) -> Tensor:
    """Add a float mask, or put -inf where a bool mask is True (PyTorch's nn.MultiheadAttention
    convention: True = may not attend)."""
    mask = as_tensor(mask)
    if mask.dtype.kind == "b":
        return ops.where(mask, as_tensor(-math.inf, scores), scores)
    if not is_floating(mask.dtype):
        raise DTypeError(f"attention: a mask must be bool or float, got {mask.dtype}")
    return scores + mask


@autocast_policy("scaled_dot_product_attention")
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None, enable_gqa: bool = False) -> Tensor:
    """softmax(q k^T * scale + mask) v over the last two dims. A bool `attn_mask` is True where
    attention IS allowed (PyTorch's convention for this function). `enable_gqa`: grouped-query
    attention, fewer key/value heads (dim -3) than query heads, each shared by a group."""
    query, key, value = as_tensor(query), as_tensor(key), as_tensor(value)
    if enable_gqa:
        key, value = _grouped(query, key), _grouped(query, value)
    d = query.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    scores = ops.matmul(query, ops.transpose(key, -2, -1)) * scale
    if is_causal:
        if attn_mask is not None:
            raise ValueError("scaled_dot_product_attention: give attn_mask or is_causal, not both")
        length, source = scores.shape[-2], scores.shape[-1]
        attn_mask = constant_like(np.tril(np.ones((length, source), bool)), scores)
    if attn_mask is not None:
        attn_mask = as_tensor(attn_mask)
        scores = _masked(scores, ops.logical_not(attn_mask) if attn_mask.dtype.kind == "b"
                         else attn_mask)
    weights = ops.softmax(scores, -1)
    if dropout_p:
        weights = _dropout(weights, dropout_p, True)
    return ops.matmul(weights, value)


def _grouped(query: Tensor, kv: Tensor) -> Tensor:
    """`kv`'s heads each repeated for its group of query heads (PyTorch's `enable_gqa`)."""
    if query.ndim < 3 or kv.ndim < 3:
        raise ShapeError(f"scaled_dot_product_attention: enable_gqa needs a heads dim (-3), got "
                         f"query {query.shape} and key/value {kv.shape}")
    heads, kv_heads = query.shape[-3], kv.shape[-3]
    if heads is None or kv_heads is None or heads % kv_heads:
        raise ShapeError(f"scaled_dot_product_attention: enable_gqa needs the query heads "
                         f"({heads}) to be a known multiple of the key/value heads ({kv_heads})")
    return kv if heads == kv_heads else ops.repeat_interleave(kv, heads // kv_heads, -3)


def batch_first_attention(query, key, value, num_heads: int, in_proj_weight, in_proj_bias,
                          out_proj_weight, out_proj_bias, dropout_p: float = 0.0,
                          training: bool = True, key_padding_mask: Tensor | None = None,
                          need_weights: bool = True, attn_mask: Tensor | None = None,
                          average_attn_weights: bool = True, is_causal: bool = False):
    """Batch-first multi-head attention, `nn.MultiheadAttention`'s: (N, L, E) queries over
    (N, S, E) keys/values; returns (output (N, L, E), weights (N, L, S) averaged over heads,
    or per head, or None)."""
    query, key, value = as_tensor(query), as_tensor(key), as_tensor(value)
    embed = query.shape[-1]
    if embed % num_heads:
        raise ShapeError(f"multi_head_attention: embed_dim {embed} is not divisible by "
                         f"num_heads {num_heads}")
    head = embed // num_heads
    length, source = query.shape[1], key.shape[1]
    if length is None or source is None:
        raise ShapeError(f"multi_head_attention: sequence lengths must be known, got query "
                         f"{query.shape} and key {key.shape}")
    biases = [None] * 3 if in_proj_bias is None else \
        [in_proj_bias[i * embed:(i + 1) * embed] for i in range(3)]
    q, k, v = (_linear(t, in_proj_weight[i * embed:(i + 1) * embed], biases[i])
               for i, t in enumerate((query, key, value)))

    def heads(t, n):  # (N, n, E) -> (N, heads, n, head_dim)
        return ops.permute(ops.reshape(t, (-1, n, num_heads, head)), (0, 2, 1, 3))

    q, k, v = heads(q, length), heads(k, source), heads(v, source)
    scores = ops.matmul(q, ops.transpose(k, -2, -1)) * (1.0 / math.sqrt(head))
    if is_causal and attn_mask is None:
        attn_mask = constant_like(np.triu(np.ones((length, source), bool), 1), scores)
    if attn_mask is not None:
        attn_mask = as_tensor(attn_mask)
        if attn_mask.ndim == 3:  # (N * heads, L, S)
            attn_mask = ops.reshape(attn_mask, (-1, num_heads, length, source))
        scores = _masked(scores, attn_mask)
    if key_padding_mask is not None:
        kpm = as_tensor(key_padding_mask)
        scores = _masked(scores, ops.reshape(kpm, (-1, 1, 1, source)))
    weights = ops.softmax(scores, -1)
    dropped = _dropout(weights, dropout_p, training) if dropout_p else weights
    out = ops.reshape(ops.permute(ops.matmul(dropped, v), (0, 2, 1, 3)), (-1, length, embed))
    out = _linear(out, out_proj_weight, out_proj_bias)
    if not need_weights:
        return out, None
    return out, (ops.mean(weights, 1) if average_attn_weights else weights)


# nn.functional re-exports this module's functions, so the two it needs are written here
def _dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """`nn.functional.dropout` of the attention weights: zero with probability `p`, rescale."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    return x * 0.0 if p == 1.0 else x * dropout_mask(x, p)


def _linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """`nn.functional.linear`: x @ weight.T + bias."""
    out = ops.matmul(x, weight.T)
    return out if bias is None else out + bias
