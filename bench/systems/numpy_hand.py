"""Hand-written NumPy: forward and hand-derived backward with preallocated buffers, in place.

The practical limit of a NumPy backend and the reference every system is checked against.
Works in the data's dtype (float32 in the benchmark; tests also run it in float64), and with
any NumPy-like array module ``xp`` (CuPy for the GPU benchmark; W1-W6, not W7's convnet).
A step leaves its loss as a 0-d array of ``xp`` (no device-to-host copy); a probe reads it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.systems.base import Probe, Unavailable, host
from bench.systems.numpy_conv import Conv
from bench.systems.seq2seq_numpy import Seq2Seq
from bench.systems.transformer_numpy import Transformer
from bench.workloads import GELU_C, GELU_K, ChainData, MlpData, OpData, RnnData


class Mlp:
    """ReLU MLP, softmax cross-entropy, momentum SGD; every buffer allocated once per batch size."""

    note = "hand-derived backward, preallocated buffers"

    def __init__(self, d: MlpData, xp: Any = np) -> None:
        self.xp = xp
        self.params = [xp.array(p, copy=True) for p in d.params]
        self.names = d.param_names
        self.vels = [xp.zeros_like(p) for p in self.params]
        self.grads = [xp.empty_like(p) for p in self.params]
        self.tmp = [xp.empty_like(p) for p in self.params]
        self.lr, self.mom = d.lr, d.momentum
        self.set_batch(d.x, d.y)

    def set_batch(self, x: np.ndarray, y: np.ndarray) -> None:
        """Use a new batch; buffers are reallocated only when its size changes."""
        xp = self.xp
        self.x, self.y = xp.asarray(x), xp.asarray(y)
        n, dt = x.shape[0], x.dtype
        if getattr(self, "_n", None) == n:
            return
        self._n = n
        widths = [W.shape[1] for W in self.params[0::2]]
        self.acts = [xp.empty((n, w), dt) for w in widths]  # hidden activations, then logits
        self.deltas = [xp.empty((n, w), dt) for w in widths]  # d loss / d pre-activation
        self.masks = [xp.empty((n, w), bool) for w in widths[:-1]]
        self.rows = xp.arange(n)
        self.m = xp.empty((n, 1), dt)
        self.s = xp.empty((n, 1), dt)

    def logits(self, x: np.ndarray) -> np.ndarray:
        """Forward pass only (no buffers touched), for accuracy runs."""
        h = self.xp.asarray(x)
        for i in range(0, len(self.params), 2):
            h = h @ self.params[i] + self.params[i + 1]
            if i + 2 < len(self.params):
                h = self.xp.maximum(h, 0)
        return h

    def forward_backward(self) -> Any:
        """The loss (a 0-d array), with the gradients in ``self.grads``."""
        xp, x, y, P, G = self.xp, self.x, self.y, self.params, self.grads
        L = len(self.acts)
        h = x
        for i, z in enumerate(self.acts):
            xp.matmul(h, P[2 * i], out=z)
            z += P[2 * i + 1]
            if i < L - 1:
                xp.maximum(z, 0, out=z)
            h = z
        logits, p = self.acts[-1], self.deltas[-1]
        xp.max(logits, axis=1, keepdims=True, out=self.m)
        xp.subtract(logits, self.m, out=p)
        picked = p[self.rows, y]
        xp.exp(p, out=p)
        xp.sum(p, axis=1, keepdims=True, out=self.s)
        loss = xp.mean(xp.log(self.s[:, 0]) - picked)
        p /= self.s
        p[self.rows, y] -= 1
        p *= 1.0 / x.shape[0]
        for i in reversed(range(L)):
            d = self.deltas[i]
            h_in = self.acts[i - 1] if i > 0 else x
            xp.matmul(h_in.T, d, out=G[2 * i])
            xp.sum(d, axis=0, out=G[2 * i + 1])
            if i > 0:
                prev = self.deltas[i - 1]
                xp.matmul(d, P[2 * i].T, out=prev)
                xp.greater(self.acts[i - 1], 0, out=self.masks[i - 1])
                prev *= self.masks[i - 1]
        return loss

    def update(self) -> None:
        for p, v, g, t in zip(self.params, self.vels, self.grads, self.tmp):
            v *= self.mom
            v += g
            self.xp.multiply(v, self.lr, out=t)
            p -= t

    def step(self) -> None:
        self.forward_backward()
        self.update()

    def probe(self) -> Probe:
        loss = float(self.forward_backward())
        grads = {n: host(g) for n, g in zip(self.names, self.grads)}
        self.update()
        return Probe(loss, grads, {n: host(p) for n, p in zip(self.names, self.params)})


class Op:
    """W2: z = sum(x*y + x); dz/dx = y + 1, dz/dy = x."""

    note = "hand-derived backward"

    def __init__(self, d: OpData, xp: Any = np) -> None:
        self.xp = xp
        self.x, self.y = xp.array(d.x, copy=True), xp.array(d.y, copy=True)
        self.t, self.gx, self.gy = (xp.empty_like(self.x) for _ in range(3))

    def _run(self) -> Any:
        xp = self.xp
        xp.multiply(self.x, self.y, out=self.t)
        self.t += self.x
        z = self.t.sum()
        xp.add(self.y, 1, out=self.gx)
        xp.copyto(self.gy, self.x)
        return z

    def step(self) -> None:
        self._run()

    def probe(self) -> Probe:
        z = self._run()
        return Probe(float(z), {"x": host(self.gx), "y": host(self.gy)})


class Chain:
    """W3: the GELU-like chain, forward and gradient fused by hand, three buffers, in place."""

    note = "hand-fused, x**3 as multiplications, 3 preallocated buffers"

    def __init__(self, d: ChainData, xp: Any = np) -> None:
        self.xp = xp
        self.x = xp.array(d.x, copy=True)
        self.a, self.b, self.c = (xp.empty_like(self.x) for _ in range(3))
        dt = self.x.dtype.type
        self.k, self.c3, self.ck = dt(GELU_K), dt(3 * GELU_C), dt(0.5 * GELU_K)

    def _run(self) -> Any:
        """x . (1 + t), twice the loss (a 0-d array), with the gradient in ``self.b``."""
        xp, x, a, b, c = self.xp, self.x, self.a, self.b, self.c
        xp.multiply(x, x, out=c)  # x^2
        xp.multiply(c, GELU_C, out=a)
        a += 1
        a *= x
        a *= self.k  # u = k (x + C x^3)
        xp.tanh(a, out=a)  # t
        xp.add(a, 1, out=b)  # 1 + t
        twice_loss = xp.dot(x, b)
        xp.multiply(a, a, out=a)
        xp.subtract(1, a, out=a)  # 1 - t^2
        c *= self.c3
        c += 1
        c *= self.ck  # 0.5 k (1 + 3 C x^2)
        a *= c
        a *= x
        b *= 0.5
        b += a  # gradient: 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 C x^2)
        return twice_loss

    def step(self) -> None:
        self._run()

    def probe(self) -> Probe:
        loss = 0.5 * float(self._run())
        return Probe(loss, {"x": host(self.b)})


class Rnn:
    """W5: tanh RNN; the input projections and weight gradients batched over time in one GEMM."""

    note = "hand-derived BPTT, input projection and weight grads as single GEMMs"

    def __init__(self, d: RnnData, xp: Any = np) -> None:
        T, B, I = d.x.shape
        H = d.w_hh.shape[0]
        dt = d.x.dtype
        self.xp = xp
        self.x2 = xp.array(d.x.reshape(T * B, I), copy=True)
        self.w_xh, self.w_hh, self.b = (xp.array(p, copy=True) for p in (d.w_xh, d.w_hh, d.b))
        self.xw = xp.empty((T, B, H), dt)
        self.hs = xp.zeros((T + 1, B, H), dt)
        self.da = xp.empty((T, B, H), dt)
        self.dh = xp.empty((B, H), dt)
        self.g = [xp.empty_like(p) for p in (self.w_xh, self.w_hh, self.b)]
        self.shape = (T, B, H)

    def _run(self) -> Any:
        """The loss (a 0-d array), with the gradients in ``self.g``."""
        xp = self.xp
        T, B, H = self.shape
        hs, da, dh = self.hs, self.da, self.dh
        xp.matmul(self.x2, self.w_xh, out=self.xw.reshape(T * B, H))
        self.xw += self.b
        for t in range(T):
            a = hs[t + 1]
            xp.matmul(hs[t], self.w_hh, out=a)
            a += self.xw[t]
            xp.tanh(a, out=a)
        loss = hs[T].sum()
        dh.fill(1)
        w_hh_t = self.w_hh.T
        for t in reversed(range(T)):
            d = da[t]
            xp.multiply(hs[t + 1], hs[t + 1], out=d)
            xp.subtract(1, d, out=d)
            d *= dh
            if t > 0:
                xp.matmul(d, w_hh_t, out=dh)
        DA = da.reshape(T * B, H)
        xp.matmul(self.x2.T, DA, out=self.g[0])
        xp.matmul(hs[:T].reshape(T * B, H).T, DA, out=self.g[1])
        xp.sum(DA, axis=0, out=self.g[2])
        return loss

    def step(self) -> None:
        self._run()

    def probe(self) -> Probe:
        loss = float(self._run())
        return Probe(loss, {n: host(g) for n, g in zip(["W_xh", "W_hh", "b"], self.g)})


def build(kind: str, data: Any, xp: Any = np) -> Any:
    """A hand-written runner for a workload kind, on the arrays of module ``xp``."""
    if kind == "conv":
        if xp is not np:
            raise Unavailable(f"W7 (convnet) is written for NumPy only, not {xp.__name__}")
        return Conv(data)
    if kind in ("seq2seq", "transformer"):
        if xp is not np:
            raise Unavailable(f"the hand-written {kind} step is NumPy only")
        return (Seq2Seq if kind == "seq2seq" else Transformer)(data)
    return {"mlp": Mlp, "op": Op, "chain": Chain, "rnn": Rnn, "rnn_while": Rnn}[kind](data, xp)
