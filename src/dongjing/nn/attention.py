"""Attention: `F.scaled_dot_product_attention`, `nn.MultiheadAttention` and the Transformer
encoder (PyTorch's parameter names, so state dicts load), composed of dongjing ops."""

from __future__ import annotations

import copy
import math

import numpy as np

from .. import ops
from ..errors import DTypeError, ShapeError
from ..ops.convert import as_tensor
from ..tensor import Tensor
from . import functional as F
from . import init
from .activation import Dropout
from .container import ModuleList
from .linear import Linear
from .module import Module
from .normalization import LayerNorm
from .parameter import Parameter


def _masked(scores: Tensor, mask) -> Tensor:
    """Add a float mask, or put -inf where a bool mask is True (PyTorch's nn.MultiheadAttention
    convention: True = may not attend)."""
    mask = as_tensor(mask)
    if mask.dtype.kind == "b":
        return ops.where(mask, as_tensor(-math.inf, scores), scores)
    if mask.dtype.kind != "f":
        raise DTypeError(f"attention: a mask must be bool or float, got {mask.dtype}")
    return scores + mask


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask=None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None) -> Tensor:
    """softmax(q k^T * scale + mask) v over the last two dims. A bool `attn_mask` is True where
    attention IS allowed (PyTorch's convention for this function)."""
    query, key, value = as_tensor(query), as_tensor(key), as_tensor(value)
    d = query.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    scores = ops.matmul(query, ops.transpose(key, -2, -1)) * scale
    if is_causal:
        if attn_mask is not None:
            raise ValueError("scaled_dot_product_attention: give attn_mask or is_causal, not both")
        length, source = scores.shape[-2], scores.shape[-1]
        attn_mask = Tensor._make(np.tril(np.ones((length, source), bool)))
    if attn_mask is not None:
        attn_mask = as_tensor(attn_mask)
        scores = _masked(scores, ops.logical_not(attn_mask) if attn_mask.dtype.kind == "b"
                         else attn_mask)
    weights = ops.softmax(scores, -1)
    if dropout_p:
        weights = F.dropout(weights, dropout_p, True)
    return ops.matmul(weights, value)


def multi_head_attention_forward(query, key, value, num_heads: int, in_proj_weight,
                                 in_proj_bias, out_proj_weight, out_proj_bias,
                                 dropout_p: float = 0.0, training: bool = True,
                                 key_padding_mask=None, need_weights: bool = True,
                                 attn_mask=None, average_attn_weights: bool = True,
                                 is_causal: bool = False):
    """Batch-first multi-head attention: (N, L, E) queries over (N, S, E) keys/values; returns
    (output (N, L, E), weights (N, L, S) averaged over heads, or per head, or None)."""
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
    q, k, v = (F.linear(t, in_proj_weight[i * embed:(i + 1) * embed], biases[i])
               for i, t in enumerate((query, key, value)))

    def heads(t, n):  # (N, n, E) -> (N, heads, n, head_dim)
        return ops.permute(ops.reshape(t, (-1, n, num_heads, head)), (0, 2, 1, 3))

    q, k, v = heads(q, length), heads(k, source), heads(v, source)
    scores = ops.matmul(q, ops.transpose(k, -2, -1)) * (1.0 / math.sqrt(head))
    if is_causal and attn_mask is None:
        attn_mask = Tensor._make(np.triu(np.ones((length, source), bool), 1))
    if attn_mask is not None:
        attn_mask = as_tensor(attn_mask)
        if attn_mask.ndim == 3:  # (N * heads, L, S)
            attn_mask = ops.reshape(attn_mask, (-1, num_heads, length, source))
        scores = _masked(scores, attn_mask)
    if key_padding_mask is not None:
        kpm = as_tensor(key_padding_mask)
        scores = _masked(scores, ops.reshape(kpm, (-1, 1, 1, source)))
    weights = ops.softmax(scores, -1)
    dropped = F.dropout(weights, dropout_p, training) if dropout_p else weights
    out = ops.reshape(ops.permute(ops.matmul(dropped, v), (0, 2, 1, 3)), (-1, length, embed))
    out = F.linear(out, out_proj_weight, out_proj_bias)
    if not need_weights:
        return out, None
    return out, (ops.mean(weights, 1) if average_attn_weights else weights)


class MultiheadAttention(Module):
    """Multi-head attention with PyTorch's parameters: in_proj_weight (3E, E), in_proj_bias
    (3E,), out_proj (a Linear). Inputs are (L, N, E), or (N, L, E) with `batch_first`."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None):
        super().__init__()
        from ..device import check_device

        check_device(device, "nn.MultiheadAttention")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("nn.MultiheadAttention: add_bias_kv and add_zero_attn are "
                                      "not supported")
        if kdim not in (None, embed_dim) or vdim not in (None, embed_dim):
            raise NotImplementedError("nn.MultiheadAttention: kdim/vdim different from "
                                      "embed_dim are not supported")
        if embed_dim % num_heads:
            raise ValueError(f"nn.MultiheadAttention: embed_dim {embed_dim} must be divisible "
                             f"by num_heads {num_heads}")
        self.embed_dim, self.num_heads = int(embed_dim), int(num_heads)
        self.head_dim = self.embed_dim // self.num_heads
        self.dropout, self.batch_first = float(dropout), bool(batch_first)
        dtype = np.dtype(dtype or np.float32)
        self.in_proj_weight = Parameter(np.empty((3 * embed_dim, embed_dim), dtype))
        if bias:
            self.in_proj_bias = Parameter(np.zeros((3 * embed_dim,), dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        init.xavier_uniform_(self.in_proj_weight)
        if bias:
            init.zeros_(self.out_proj.bias)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask=None,
                need_weights: bool = True, attn_mask=None, average_attn_weights: bool = True,
                is_causal: bool = False):
        """(attn_output, attn_weights or None), shaped like the inputs' layout."""
        query, key, value = as_tensor(query), as_tensor(key), as_tensor(value)
        batched = query.ndim == 3
        if not batched:
            query, key, value = (ops.unsqueeze(t, 0) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = ops.unsqueeze(as_tensor(key_padding_mask), 0)
        elif not self.batch_first:
            query, key, value = (ops.transpose(t, 0, 1) for t in (query, key, value))
        out, weights = multi_head_attention_forward(
            query, key, value, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.out_proj.weight, self.out_proj.bias, self.dropout, self.training,
            key_padding_mask, need_weights, attn_mask, average_attn_weights, is_causal)
        if not batched:
            return ops.squeeze(out, 0), None if weights is None else ops.squeeze(weights, 0)
        if not self.batch_first:
            out = ops.transpose(out, 0, 1)
        return out, weights

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"


_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual and a LayerNorm (after by
    default, before with `norm_first`); PyTorch's submodule names."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias=bias,
                                            batch_first=batch_first, device=device, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise ValueError(f"TransformerEncoderLayer: activation must be 'relu', 'gelu' "
                                 f"or a callable, got {activation!r}")
            activation = _ACTIVATIONS[activation]
        self.activation = activation

    def _attend(self, x, mask, padding_mask, is_causal):
        out = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=padding_mask,
                             need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(out)

    def _feed_forward(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src: Tensor, src_mask=None, src_key_padding_mask=None,
                is_causal: bool = False) -> Tensor:
        x = as_tensor(src)
        if self.norm_first:
            x = x + self._attend(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._feed_forward(self.norm2(x))
        x = self.norm1(x + self._attend(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._feed_forward(x))


class TransformerEncoder(Module):
    """`num_layers` copies of an encoder layer (`layers.0`, `layers.1`, ...), then an optional
    norm."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm=None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = int(num_layers), norm

    def forward(self, src: Tensor, mask=None, src_key_padding_mask=None,
                is_causal: bool | None = None) -> Tensor:
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        return x if self.norm is None else self.norm(x)
