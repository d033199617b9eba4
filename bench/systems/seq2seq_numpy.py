"""W9 by hand in NumPy: the seq2seq tutorial's GRU encoder and attention decoder at batch 1,
forward step by step with the values backward needs kept, the backward derived by hand, SGD.

Layouts are PyTorch's (Linear weights (out, in); GRU gates stacked r, z, n), so gradients
compare name for name with the other systems.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.systems.base import HandTraining
from bench.workloads import SOS_TOKEN, Seq2SeqData


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def gru_forward(x, h, w_ih, w_hh, b_ih, b_hh):
    """One GRU step on vectors; returns the new hidden state and what backward needs."""
    H = h.shape[0]
    gi = w_ih @ x + b_ih
    gh = w_hh @ h + b_hh
    r = _sigmoid(gi[:H] + gh[:H])
    z = _sigmoid(gi[H:2 * H] + gh[H:2 * H])
    n = np.tanh(gi[2 * H:] + r * gh[2 * H:])
    h_new = (1 - z) * n + z * h
    return h_new, (x, h, r, z, n, gh[2 * H:])


def gru_backward(dh_new, cache, w_ih, w_hh, grads):
    """Accumulate one GRU step's parameter gradients into ``grads`` (w_ih, w_hh, b_ih, b_hh);
    return the gradients of its input and of its previous hidden state."""
    x, h, r, z, n, gh_n = cache
    dn = dh_new * (1 - z)
    dz = dh_new * (h - n)
    dh = dh_new * z
    dn_pre = dn * (1 - n * n)
    dr_pre = dn_pre * gh_n * r * (1 - r)
    dz_pre = dz * z * (1 - z)
    dgi = np.concatenate([dr_pre, dz_pre, dn_pre])
    dgh = np.concatenate([dr_pre, dz_pre, dn_pre * r])
    g_ih, g_hh, g_bih, g_bhh = grads
    g_ih += np.outer(dgi, x)
    g_hh += np.outer(dgh, h)
    g_bih += dgi
    g_bhh += dgh
    return w_ih.T @ dgi, dh + w_hh.T @ dgh


class Seq2Seq(HandTraining):
    """The whole training step: encoder, attention decoder with teacher forcing, summed NLL,
    backward by hand, plain SGD."""

    note = "hand-derived backward, step by step"

    def __init__(self, d: Seq2SeqData, xp: Any = np) -> None:
        self.names = d.param_names
        self.p = dict(zip(self.names, (np.array(v, copy=True) for v in d.params)))
        self.src, self.tgt, self.lr = d.src, d.tgt, d.lr

    def forward_backward(self) -> tuple[float, dict[str, np.ndarray]]:
        p = self.p
        enc = [p[f"encoder.gru.{n}_l0"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        dec = [p[f"decoder.gru.{n}_l0"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        wa, ba = p["decoder.attention.Wa.weight"], p["decoder.attention.Wa.bias"]
        ua, bu = p["decoder.attention.Ua.weight"], p["decoder.attention.Ua.bias"]
        va, bv = p["decoder.attention.Va.weight"], p["decoder.attention.Va.bias"]
        w_out, b_out = p["decoder.out.weight"], p["decoder.out.bias"]
        e_enc, e_dec = p["encoder.embedding.weight"], p["decoder.embedding.weight"]
        hidden = e_enc.shape[1]
        dtype = e_enc.dtype

        h = np.zeros(hidden, dtype)
        enc_caches, keys = [], []
        for token in self.src:
            h, cache = gru_forward(e_enc[token], h, *enc)
            enc_caches.append(cache)
            keys.append(h)
        keys = np.stack(keys)  # (L, H): the encoder's outputs
        keys_u = keys @ ua.T + bu  # the attention's key projection, once per sentence
        loss = 0.0
        dec_caches = []
        inputs = [SOS_TOKEN] + [int(t) for t in self.tgt[:-1]]
        for token, target in zip(inputs, self.tgt):
            q = h
            a = np.tanh(wa @ q + ba + keys_u)  # (L, H)
            s = a @ va[0] + bv[0]
            w = np.exp(s - s.max())
            w /= w.sum()
            context = w @ keys
            x = np.concatenate([e_dec[token], context])
            h, cache = gru_forward(x, q, *dec)
            o = w_out @ h + b_out
            m = o.max()
            logsum = m + np.log(np.exp(o - m).sum())
            loss += logsum - o[target]
            dec_caches.append((token, target, q, a, w, cache, h, o, logsum))

        g = {n: np.zeros_like(v) for n, v in p.items()}
        g_dec = [g[f"decoder.gru.{n}_l0"] for n in ("weight_ih", "weight_hh", "bias_ih",
                                                     "bias_hh")]
        g_enc = [g[f"encoder.gru.{n}_l0"] for n in ("weight_ih", "weight_hh", "bias_ih",
                                                     "bias_hh")]
        d_keys = np.zeros_like(keys)
        d_keys_u = np.zeros_like(keys)
        dh = np.zeros(hidden, dtype)
        for token, target, q, a, w, cache, h_t, o, logsum in reversed(dec_caches):
            do = np.exp(o - logsum)
            do[target] -= 1
            g["decoder.out.weight"] += np.outer(do, h_t)
            g["decoder.out.bias"] += do
            dh = dh + w_out.T @ do
            dx, dq = gru_backward(dh, cache, dec[0], dec[1], g_dec)
            g["decoder.embedding.weight"][token] += dx[:hidden]
            dcontext = dx[hidden:]
            dw = keys @ dcontext
            d_keys += np.outer(w, dcontext)
            ds = w * (dw - w @ dw)
            g["decoder.attention.Va.weight"][0] += ds @ a
            g["decoder.attention.Va.bias"][0] += ds.sum()
            da = np.outer(ds, va[0]) * (1 - a * a)
            da_rows = da.sum(axis=0)
            g["decoder.attention.Wa.weight"] += np.outer(da_rows, q)
            g["decoder.attention.Wa.bias"] += da_rows
            d_keys_u += da
            dh = dq + wa.T @ da_rows
        g["decoder.attention.Ua.weight"] += d_keys_u.T @ keys
        g["decoder.attention.Ua.bias"] += d_keys_u.sum(axis=0)
        d_keys += d_keys_u @ ua
        # the decoder started from the encoder's last state: its gradient joins that output's
        for t in range(len(self.src) - 1, -1, -1):
            dh = dh + d_keys[t]
            dx, dh = gru_backward(dh, enc_caches[t], enc[0], enc[1], g_enc)
            g["encoder.embedding.weight"][self.src[t]] += dx
        return float(loss), g

    def update(self, grads: dict[str, np.ndarray]) -> None:
        for name, value in self.p.items():
            value -= self.lr * grads[name]
