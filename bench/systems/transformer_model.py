"""W8's model written once against PyTorch's API (a nanoGPT-sized GPT: pre-LayerNorm blocks,
`scaled_dot_product_attention(is_causal=True)`, exact GELU, the token embedding tied to the
output head): the same code runs on ``torch`` and on ``dongjing`` (passed in as ``lib``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.systems.base import EagerTraining
from bench.workloads import TransformerData


def build_model(lib: Any, d: TransformerData) -> Any:
    """The LM as ``lib.nn`` modules, loaded with the workload's parameters."""
    nn, F = lib.nn, lib.nn.functional
    vocab, width = d.params[0].shape
    context = d.params[1].shape[0]
    heads = d.heads

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(width)
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)
            self.ln2 = nn.LayerNorm(width)
            self.fc1 = nn.Linear(width, 4 * width)
            self.fc2 = nn.Linear(4 * width, width)

        def forward(self, x: Any) -> Any:
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok_emb = nn.Embedding(vocab, width)
            self.pos_emb = nn.Embedding(context, width)
            self.blocks = nn.ModuleList([Block() for _ in range(d.layers)])
            self.ln_f = nn.LayerNorm(width)

        def forward(self, idx: Any) -> Any:
            T = idx.shape[1]
            x = self.tok_emb(idx) + self.pos_emb(lib.arange(T))
            for block in self.blocks:
                x = block(x)
            return self.ln_f(x) @ self.tok_emb.weight.T  # the head shares the embedding

    model = GPT()
    state = {n: lib.tensor(np.array(v, copy=True)) for n, v in zip(d.param_names, d.params)}
    model.load_state_dict(state)
    return model


def lm_loss(lib: Any, model: Any, idx: Any, targets: Any) -> Any:
    """Mean cross-entropy of the next token over every position."""
    logits = model(idx)
    return lib.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def make_optimizer(lib: Any, model: Any, d: TransformerData) -> Any:
    """AdamW with weight decay on the 2-D weights only (nanoGPT's groups)."""
    params = list(model.parameters())
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": d.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return lib.optim.AdamW(groups, lr=d.lr, betas=d.betas, eps=d.eps)


class EagerTransformer(EagerTraining):
    """W8 eagerly in ``lib``: forward, ``backward()``, ``clip_grad_norm_``, ``AdamW.step()``,
    gradients set to None; ``loss_fn`` may be a compiled version of the loss."""

    note = "nanoGPT-style modules, clip_grad_norm_, optim.AdamW"

    def __init__(self, lib: Any, d: TransformerData, device: Any = None, loss_fn: Any = None):
        self.lib, self.d = lib, d
        self.model = build_model(lib, d)
        self.names = d.param_names
        named = dict(self.model.named_parameters())
        self.params = [named[n] for n in self.names]
        self.opt = make_optimizer(lib, self.model, d)
        self.idx = lib.tensor(d.tokens[:, :-1].astype(np.int64))
        self.targets = lib.tensor(d.tokens[:, 1:].astype(np.int64))
        self.loss_fn = loss_fn or (lambda idx, targets: lm_loss(lib, self.model, idx, targets))

    def _forward_backward(self) -> Any:
        self.opt.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.idx, self.targets)
        loss.backward()
        return loss

    def _update(self) -> None:
        self.lib.nn.utils.clip_grad_norm_(self.params, self.d.max_norm)
        self.opt.step()
