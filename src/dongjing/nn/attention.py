"""Attention: `F.scaled_dot_product_attention`, `nn.MultiheadAttention` and the Transformer
encoder (PyTorch's parameter names, so state dicts load), composed of dongjing ops."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np

from .. import ops
from ..devices.device import check_device
from ..ops.convert import as_tensor
from ..tensor import Tensor
from . import functional as F
from . import init
from .activation import Dropout
from .attention_forward import multi_head_attention_forward  # noqa: F401
from .attention_functional import batch_first_attention, scaled_dot_product_attention  # noqa: F401
from .container import ModuleList
from .linear import Linear
from .module import Module
from .normalization import LayerNorm
from .parameter import Parameter

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..types import DeviceLike, DTypeLike


class MultiheadAttention(Module):
    """Multi-head attention with PyTorch's parameters: in_proj_weight (3E, E), in_proj_bias
    (3E,), out_proj (a Linear). Inputs are (L, N, E), or (N, L, E) with `batch_first`."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None,
                 batch_first: bool = False, device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        super().__init__()

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

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None,
                average_attn_weights: bool = True,
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
        out, weights = batch_first_attention(
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


def resolve_activation(layer: str, activation):
    """A transformer layer's `activation`: "relu", "gelu" or a callable (by default `F.relu`,
    as PyTorch's)."""
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"{layer}: activation must be 'relu', 'gelu' or a callable, got "
                             f"{activation!r}")
        activation = _ACTIVATIONS[activation]
    return activation


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual and a LayerNorm (after by
    default, before with `norm_first`); PyTorch's submodule names."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = F.relu,
                 layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device: DeviceLike | None = None, dtype: DTypeLike | None = None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias=bias,
                                            batch_first=batch_first, device=device, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, dtype=dtype)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)
        self.activation = resolve_activation("TransformerEncoderLayer", activation)

    def _attend(self, x, mask, padding_mask, is_causal):
        out = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=padding_mask,
                             need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(out)

    def _feed_forward(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
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

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = int(num_layers), norm

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        return x if self.norm is None else self.norm(x)
