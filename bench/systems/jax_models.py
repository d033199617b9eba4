"""W8 and W9 in JAX: each training step (forward, ``value_and_grad``, the update) is one
``jax.jit``-compiled function over a dict of parameters named as PyTorch names them."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bench.systems.base import Probe
from bench.workloads import SOS_TOKEN, Seq2SeqData, TransformerData


class _Step:
    """A jitted ``train(state...) -> (loss, grads, params, *rest)`` run in place."""

    note = "value_and_grad + the update in one jit"

    def __init__(self, jax: Any, train: Any, params: dict, rest: tuple, data: tuple,
                 names: list[str]) -> None:
        self.jax, self.train, self.params, self.rest = jax, jax.jit(train), params, rest
        self.data, self.names = data, names

    def _run(self) -> tuple[Any, Any]:
        out = self.jax.block_until_ready(self.train(self.params, *self.rest, *self.data))
        loss, grads, self.params, *rest = out
        self.rest = tuple(rest)
        return loss, grads

    def step(self) -> None:
        self._run()

    def probe(self) -> Probe:
        loss, grads = self._run()
        return Probe(float(loss), {n: np.asarray(grads[n]) for n in self.names},
                     {n: np.asarray(self.params[n]) for n in self.names})


def seq2seq(jax: Any, jnp: Any, d: Seq2SeqData, put: Any) -> _Step:
    """W9: the GRU encoder and the attention decoder, both loops unrolled at trace time."""
    length = len(d.src)

    def gru(x, h, p, prefix):
        size = h.shape[0]
        gi = p[prefix + "weight_ih_l0"] @ x + p[prefix + "bias_ih_l0"]
        gh = p[prefix + "weight_hh_l0"] @ h + p[prefix + "bias_hh_l0"]
        r = jax.nn.sigmoid(gi[:size] + gh[:size])
        z = jax.nn.sigmoid(gi[size:2 * size] + gh[size:2 * size])
        n = jnp.tanh(gi[2 * size:] + r * gh[2 * size:])
        return (1 - z) * n + z * h

    def loss_fn(p, src, tgt):
        h = jnp.zeros(d.hidden, jnp.float32)
        keys = []
        for t in range(length):
            h = gru(p["encoder.embedding.weight"][src[t]], h, p, "encoder.gru.")
            keys.append(h)
        keys = jnp.stack(keys)
        keys_u = keys @ p["decoder.attention.Ua.weight"].T + p["decoder.attention.Ua.bias"]
        total, token = 0.0, SOS_TOKEN
        for t in range(length):
            a = jnp.tanh(p["decoder.attention.Wa.weight"] @ h + p["decoder.attention.Wa.bias"]
                         + keys_u)
            s = a @ p["decoder.attention.Va.weight"][0] + p["decoder.attention.Va.bias"][0]
            context = jax.nn.softmax(s) @ keys
            x = jnp.concatenate([p["decoder.embedding.weight"][token], context])
            h = gru(x, h, p, "decoder.gru.")
            o = p["decoder.out.weight"] @ h + p["decoder.out.bias"]
            total = total + jax.nn.logsumexp(o) - o[tgt[t]]
            token = tgt[t]
        return total

    def train(p, src, tgt):
        loss, grads = jax.value_and_grad(loss_fn)(p, src, tgt)
        return loss, grads, {n: p[n] - d.lr * grads[n] for n in p}

    params = {n: put(v) for n, v in zip(d.param_names, d.params)}
    return _Step(jax, train, params, (), (put(d.src), put(d.tgt)), d.param_names)


def transformer(jax: Any, jnp: Any, d: TransformerData, put: Any) -> _Step:
    """W8: the GPT, cross-entropy, clipping by global norm and AdamW in one jit."""
    heads, names = d.heads, d.param_names
    b1, b2 = d.betas

    def layer_norm(x, w, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5) * w + b

    def loss_fn(p, idx, targets):
        B, T = idx.shape
        x = p["tok_emb.weight"][idx] + p["pos_emb.weight"][:T]
        C = x.shape[-1]
        causal = jnp.tril(jnp.ones((T, T), bool))
        for i in range(d.layers):
            b = f"blocks.{i}."
            qkv = layer_norm(x, p[b + "ln1.weight"], p[b + "ln1.bias"]) @ p[b + "qkv.weight"].T
            qkv = qkv + p[b + "qkv.bias"]
            q, k, v = (qkv[..., j * C:(j + 1) * C].reshape(B, T, heads, C // heads)
                       .transpose(0, 2, 1, 3) for j in range(3))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(C // heads)
            probs = jax.nn.softmax(jnp.where(causal, scores, -jnp.inf), axis=-1)
            y = (probs @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
            x = x + y @ p[b + "proj.weight"].T + p[b + "proj.bias"]
            h = layer_norm(x, p[b + "ln2.weight"], p[b + "ln2.bias"]) @ p[b + "fc1.weight"].T
            h = jax.nn.gelu(h + p[b + "fc1.bias"], approximate=False)
            x = x + h @ p[b + "fc2.weight"].T + p[b + "fc2.bias"]
        logits = layer_norm(x, p["ln_f.weight"], p["ln_f.bias"]) @ p["tok_emb.weight"].T
        picked = jnp.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
        return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - picked)

    def train(p, m, v, t, idx, targets):
        loss, grads = jax.value_and_grad(loss_fn)(p, idx, targets)
        total = jnp.sqrt(sum(jnp.sum(g * g) for g in grads.values()))
        coef = jnp.minimum(1.0, d.max_norm / (total + 1e-6))
        t = t + 1
        bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
        new_p, new_m, new_v = {}, {}, {}
        for n in p:
            g = grads[n] * coef
            new_m[n] = b1 * m[n] + (1 - b1) * g
            new_v[n] = b2 * v[n] + (1 - b2) * g * g
            base = p[n] * (1 - d.lr * d.weight_decay) if p[n].ndim == 2 else p[n]
            new_p[n] = base - (d.lr / bc1) * new_m[n] / (jnp.sqrt(new_v[n]) / jnp.sqrt(bc2)
                                                         + d.eps)
        return loss, grads, new_p, new_m, new_v, t

    params = {n: put(v) for n, v in zip(names, d.params)}
    zeros = {n: put(np.zeros_like(v)) for n, v in zip(names, d.params)}
    state = (zeros, dict(zeros), put(np.float32(0.0)))
    data = (put(d.tokens[:, :-1]), put(d.tokens[:, 1:]))
    return _Step(jax, train, params, state, data, names)
