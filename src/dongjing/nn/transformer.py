"""The decoder half of PyTorch's Transformer (`TransformerDecoderLayer`,
`TransformerDecoder`) and the whole `nn.Transformer`, with PyTorch's submodule names and
default initialization, built from `MultiheadAttention`, `Linear`, `LayerNorm`, `Dropout`."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np

from ..ops.convert import as_tensor
from ..tensor import Tensor
from . import functional as F
from . import init
from .activation import Dropout
from .attention import (
    MultiheadAttention,
    TransformerEncoder,
    TransformerEncoderLayer,
    resolve_activation,
)
from .container import ModuleList
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..types import DeviceLike, DTypeLike


class TransformerDecoderLayer(Module):
    """Self-attention over the target, attention over the encoder's memory, then a
    feed-forward block; each with a residual and a LayerNorm (after by default, before with
    `norm_first`)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = F.relu,
                 layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device: DeviceLike | None = None, dtype: DTypeLike | None = None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias=bias,
                                            batch_first=batch_first, device=device, dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout, bias=bias,
                                                 batch_first=batch_first, device=device,
                                                 dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, dtype=dtype)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, dtype=dtype)
        self.dropout1, self.dropout2, self.dropout3 = (Dropout(dropout), Dropout(dropout),
                                                       Dropout(dropout))
        self.activation = resolve_activation("TransformerDecoderLayer", activation)

    def _self_block(self, x, mask, padding_mask, is_causal):
        out = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=padding_mask,
                             need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(out)

    def _memory_block(self, x, memory, mask, padding_mask, is_causal):
        out = self.multihead_attn(x, memory, memory, attn_mask=mask,
                                  key_padding_mask=padding_mask, need_weights=False,
                                  is_causal=is_causal)[0]
        return self.dropout2(out)

    def _feed_forward(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False) -> Tensor:
        x, memory = as_tensor(tgt), as_tensor(memory)
        if self.norm_first:
            x = x + self._self_block(self.norm1(x), tgt_mask, tgt_key_padding_mask,
                                     tgt_is_causal)
            x = x + self._memory_block(self.norm2(x), memory, memory_mask,
                                       memory_key_padding_mask, memory_is_causal)
            return x + self._feed_forward(self.norm3(x))
        x = self.norm1(x + self._self_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._memory_block(x, memory, memory_mask, memory_key_padding_mask,
                                              memory_is_causal))
        return self.norm3(x + self._feed_forward(x))


class TransformerDecoder(Module):
    """`num_layers` copies of a decoder layer (`layers.0`, ...), then an optional norm."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Module | None = None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = int(num_layers), norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return x if self.norm is None else self.norm(x)


def generate_square_subsequent_mask(sz: int, device: DeviceLike | None = None,
                                    dtype: DTypeLike | None = None) -> Tensor:
    """An (sz, sz) float mask: 0 on and below the diagonal, -inf above (future positions)."""
    mask = np.triu(np.full((sz, sz), -np.inf, np.float32 if dtype is None else dtype), 1)
    return Tensor._make(mask)


class Transformer(Module):
    """Encoder-decoder Transformer ("Attention Is All You Need") with PyTorch's layout:
    `encoder` (layers + final LayerNorm) and `decoder` (layers + final LayerNorm); every
    matrix initialized Xavier-uniform, as PyTorch's `_reset_parameters` does."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = F.relu,
                 custom_encoder: Module | None = None, custom_decoder: Module | None = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias,
                                            device=device, dtype=dtype)
            self.encoder = TransformerEncoder(layer, num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, dtype=dtype))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias,
                                            device=device, dtype=dtype)
            self.decoder = TransformerDecoder(layer, num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, dtype=dtype))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, src_is_causal: bool | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    generate_square_subsequent_mask = staticmethod(generate_square_subsequent_mask)
