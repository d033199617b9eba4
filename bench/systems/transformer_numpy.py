"""W8 by hand in NumPy: a GPT-style causal transformer LM's training step (pre-LayerNorm
blocks, causal attention, exact GELU, tied output head), its backward derived by hand,
gradient clipping by global norm and AdamW.

Layouts are PyTorch's (Linear weights (out, in)), so gradients compare name for name.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bench.systems.base import HandTraining
from bench.workloads import TransformerData

LN_EPS = 1e-5


def erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz & Stegun 7.1.26 in float64 (absolute error below 1.5e-7)."""
    t = np.abs(x).astype(np.float64)
    k = 1.0 / (1.0 + 0.3275911 * t)
    poly = k * (0.254829592 + k * (-0.284496736 + k * (1.421413741 + k * (-1.453152027
                                                                        + k * 1.061405429))))
    return (np.sign(x) * (1.0 - poly * np.exp(-t * t))).astype(x.dtype)


def layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    rstd = 1.0 / np.sqrt((xc * xc).mean(-1, keepdims=True) + LN_EPS)
    xhat = xc * rstd
    return xhat * w + b, (xhat, rstd, w)


def layer_norm_backward(dy, cache):
    xhat, rstd, w = cache
    axes = tuple(range(dy.ndim - 1))
    dw, db = (dy * xhat).sum(axes), dy.sum(axes)
    dxhat = dy * w
    dx = rstd * (dxhat - dxhat.mean(-1, keepdims=True)
                 - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    return dx, dw, db


def linear(x, w, b):
    return x @ w.T + b


def linear_backward(dy, x, w):
    """Gradients of x, w, b for y = x @ w.T + b over any leading dims."""
    flat_dy, flat_x = dy.reshape(-1, dy.shape[-1]), x.reshape(-1, x.shape[-1])
    return dy @ w, flat_dy.T @ flat_x, flat_dy.sum(0)


class Transformer(HandTraining):
    """The training step of W8: forward, mean cross-entropy, backward, clipping, AdamW."""

    note = "hand-derived backward, AdamW"

    def __init__(self, d: TransformerData, xp: Any = np) -> None:
        self.d = d
        self.names = d.param_names
        self.p = {n: np.array(v, copy=True) for n, v in zip(self.names, d.params)}
        self.m = {n: np.zeros_like(v) for n, v in self.p.items()}
        self.v = {n: np.zeros_like(v) for n, v in self.p.items()}
        self.t = 0
        self.idx, self.targets = d.tokens[:, :-1], d.tokens[:, 1:]

    def forward_backward(self) -> tuple[float, dict[str, np.ndarray]]:
        p, d = self.p, self.d
        B, T = self.idx.shape
        C = p["tok_emb.weight"].shape[1]
        nh = d.heads
        hs = C // nh
        scale = 1.0 / math.sqrt(hs)
        causal = np.triu(np.ones((T, T), bool), 1)

        x = p["tok_emb.weight"][self.idx] + p["pos_emb.weight"][:T]
        caches = []
        for i in range(d.layers):
            b = f"blocks.{i}."
            a_in, ln1 = layer_norm(x, p[b + "ln1.weight"], p[b + "ln1.bias"])
            qkv = linear(a_in, p[b + "qkv.weight"], p[b + "qkv.bias"])
            q, k, v = (qkv[..., j * C:(j + 1) * C].reshape(B, T, nh, hs).transpose(0, 2, 1, 3)
                       for j in range(3))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale
            scores[..., causal] = -np.inf
            probs = np.exp(scores - scores.max(-1, keepdims=True))
            probs /= probs.sum(-1, keepdims=True)
            y = (probs @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
            x = x + linear(y, p[b + "proj.weight"], p[b + "proj.bias"])
            m_in, ln2 = layer_norm(x, p[b + "ln2.weight"], p[b + "ln2.bias"])
            h = linear(m_in, p[b + "fc1.weight"], p[b + "fc1.bias"])
            cdf = 0.5 * (1.0 + erf(h * np.float32(1 / math.sqrt(2))))
            g = h * cdf
            x = x + linear(g, p[b + "fc2.weight"], p[b + "fc2.bias"])
            caches.append((a_in, ln1, q, k, v, probs, y, m_in, ln2, h, cdf, g))
        xf, lnf = layer_norm(x, p["ln_f.weight"], p["ln_f.bias"])
        logits = xf @ p["tok_emb.weight"].T
        shifted = logits - logits.max(-1, keepdims=True)
        logsum = np.log(np.exp(shifted).sum(-1, keepdims=True))
        logp = shifted - logsum
        rows = np.arange(B)[:, None], np.arange(T)[None, :]
        loss = -logp[rows[0], rows[1], self.targets].mean()

        grads = {n: np.zeros_like(v) for n, v in p.items()}
        dlogits = np.exp(logp)
        dlogits[rows[0], rows[1], self.targets] -= 1
        dlogits /= B * T
        grads["tok_emb.weight"] += dlogits.reshape(-1, logits.shape[-1]).T @ xf.reshape(-1, C)
        dx, grads["ln_f.weight"], grads["ln_f.bias"] = layer_norm_backward(
            dlogits @ p["tok_emb.weight"], lnf)
        for i in reversed(range(d.layers)):
            b = f"blocks.{i}."
            a_in, ln1, q, k, v, probs, y, m_in, ln2, h, cdf, g = caches[i]
            dg, grads[b + "fc2.weight"], grads[b + "fc2.bias"] = linear_backward(
                dx, g, p[b + "fc2.weight"])
            pdf = np.exp(-0.5 * h * h) * np.float32(1 / math.sqrt(2 * math.pi))
            dh = dg * (cdf + h * pdf)
            dm, grads[b + "fc1.weight"], grads[b + "fc1.bias"] = linear_backward(
                dh, m_in, p[b + "fc1.weight"])
            dln2, grads[b + "ln2.weight"], grads[b + "ln2.bias"] = layer_norm_backward(dm, ln2)
            dx = dx + dln2
            dy, grads[b + "proj.weight"], grads[b + "proj.bias"] = linear_backward(
                dx, y, p[b + "proj.weight"])
            dy = dy.reshape(B, T, nh, hs).transpose(0, 2, 1, 3)
            dprobs = dy @ v.transpose(0, 1, 3, 2)
            dv = probs.transpose(0, 1, 3, 2) @ dy
            dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdims=True)) * scale
            dq = dscores @ k
            dk = dscores.transpose(0, 1, 3, 2) @ q
            dqkv = np.concatenate([t.transpose(0, 2, 1, 3).reshape(B, T, C)
                                   for t in (dq, dk, dv)], axis=-1)
            da, grads[b + "qkv.weight"], grads[b + "qkv.bias"] = linear_backward(
                dqkv, a_in, p[b + "qkv.weight"])
            dln1, grads[b + "ln1.weight"], grads[b + "ln1.bias"] = layer_norm_backward(da, ln1)
            dx = dx + dln1
        np.add.at(grads["tok_emb.weight"], self.idx, dx)
        grads["pos_emb.weight"][:T] += dx.sum(0)
        return float(loss), grads

    def update(self, grads: dict[str, np.ndarray]) -> None:
        """clip_grad_norm_(max_norm) over all gradients, then one AdamW step (weight decay on
        the 2-D weights only)."""
        d = self.d
        total = math.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads.values()))
        coef = min(1.0, d.max_norm / (total + 1e-6))
        self.t += 1
        b1, b2 = d.betas
        bc1, bc2 = 1 - b1 ** self.t, 1 - b2 ** self.t
        for n, value in self.p.items():
            g = grads[n] * np.float32(coef)
            m, v = self.m[n], self.v[n]
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            if value.ndim == 2:
                value *= np.float32(1 - d.lr * d.weight_decay)
            value -= (d.lr / bc1) * m / (np.sqrt(v) / math.sqrt(bc2) + d.eps)
