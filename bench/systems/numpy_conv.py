"""Hand-written NumPy for W7 (the MNIST convnet): NHWC activations, im2col by strided views
copied once into a preallocated column buffer, one GEMM per convolution per pass.

Works in the data's dtype (float32 in the benchmark; tests also run it in float64).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from bench.systems.base import Probe
from bench.workloads import ConvData


def im2col(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """3x3 windows of NHWC ``x`` copied into ``out`` (N, OH, OW, C, 3, 3); the 2-d view
    (N*OH*OW, C*9) of it."""
    np.copyto(out, sliding_window_view(x, (3, 3), axis=(1, 2)))
    n, oh, ow, c = out.shape[:4]
    return out.reshape(n * oh * ow, c * 9)


def col2im(cols: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The adjoint of im2col: (N, OH, OW, C, 3, 3) windows summed into NHWC ``out``."""
    oh, ow = cols.shape[1:3]
    out.fill(0)
    for i in range(3):
        for j in range(3):
            out[:, i:i + oh, j:j + ow, :] += cols[..., i, j]
    return out


class Conv:
    """conv-ReLU-conv-ReLU-maxpool-linear-ReLU-linear, cross-entropy, momentum SGD."""

    note = "hand-derived backward, NHWC im2col + one GEMM per conv, preallocated buffers"

    def __init__(self, d: ConvData) -> None:
        self.params = [p.copy() for p in d.params]
        self.names = d.param_names
        self.vels = [np.zeros_like(p) for p in self.params]
        self.grads = [np.empty_like(p) for p in self.params]
        self.lr, self.mom = d.lr, d.momentum
        self.y = d.y
        n, _, h, w = d.x.shape
        dt = d.x.dtype
        self.x = np.ascontiguousarray(d.x.transpose(0, 2, 3, 1))  # NHWC
        c1, c2 = self.params[0].shape[0], self.params[2].shape[0]
        h1, w1, h2, w2 = h - 2, w - 2, h - 4, w - 4
        self.cols1 = np.empty((n, h1, w1, 1, 3, 3), dt)
        self.cols2 = np.empty((n, h2, w2, c1, 3, 3), dt)
        self.a1 = np.empty((n, h1, w1, c1), dt)
        self.a2 = np.empty((n, h2, w2, c2), dt)
        self.da1 = np.empty_like(self.a1)
        self.da2 = np.empty_like(self.a2)
        self.dcols2 = np.empty_like(self.cols2)
        self.rows = np.arange(n)

    def forward_backward(self) -> float:
        P, G, n = self.params, self.grads, self.x.shape[0]
        W1, W2 = P[0].reshape(P[0].shape[0], -1).T, P[2].reshape(P[2].shape[0], -1).T
        cols1 = im2col(self.x, self.cols1)
        a1 = self.a1.reshape(-1, W1.shape[1])
        np.matmul(cols1, W1, out=a1)
        a1 += P[1]
        np.maximum(a1, 0, out=a1)
        cols2 = im2col(self.a1, self.cols2)
        a2 = self.a2.reshape(-1, W2.shape[1])
        np.matmul(cols2, W2, out=a2)
        a2 += P[3]
        np.maximum(a2, 0, out=a2)
        _, h2, w2, c2 = self.a2.shape
        win = self.a2[:, :h2 // 2 * 2, :w2 // 2 * 2].reshape(n, h2 // 2, 2, w2 // 2, 2, c2)
        pooled = win.max(axis=(2, 4))
        flat = pooled.transpose(0, 3, 1, 2).reshape(n, -1)  # PyTorch's (C, H, W) order
        z3 = flat @ P[4] + P[5]
        h3 = np.maximum(z3, 0)
        logits = h3 @ P[6] + P[7]
        m = logits.max(axis=1, keepdims=True)
        p = np.exp(logits - m)
        s = p.sum(axis=1, keepdims=True)
        loss = float(np.mean(np.log(s[:, 0]) + m[:, 0] - logits[self.rows, self.y]))
        p /= s
        p[self.rows, self.y] -= 1
        p *= 1.0 / n
        np.matmul(h3.T, p, out=G[6])
        np.sum(p, axis=0, out=G[7])
        d3 = p @ P[6].T
        d3 *= z3 > 0
        np.matmul(flat.T, d3, out=G[4])
        np.sum(d3, axis=0, out=G[5])
        dpool = (d3 @ P[4].T).reshape(pooled.shape[0], c2, h2 // 2, w2 // 2).transpose(0, 2, 3, 1)
        # the pooled gradient goes to the window's largest value; ties only occur at ReLU's 0,
        # where the ReLU mask below zeroes them anyway
        self.da2.fill(0)
        dwin = self.da2[:, :h2 // 2 * 2, :w2 // 2 * 2].reshape(win.shape)
        np.multiply(win == pooled[:, :, None, :, None], dpool[:, :, None, :, None], out=dwin)
        da2 = self.da2.reshape(a2.shape)
        da2 *= a2 > 0
        # into a contiguous result, then copied: a transposed `out=` makes NumPy skip BLAS
        G[2][...] = (cols2.T @ da2).T.reshape(G[2].shape)
        np.sum(da2, axis=0, out=G[3])
        np.matmul(da2, W2.T, out=self.dcols2.reshape(cols2.shape))
        col2im(self.dcols2, self.da1)
        da1 = self.da1.reshape(a1.shape)
        da1 *= a1 > 0
        G[0][...] = (cols1.T @ da1).T.reshape(G[0].shape)
        np.sum(da1, axis=0, out=G[1])
        return loss

    def update(self) -> None:
        for p, v, g in zip(self.params, self.vels, self.grads):
            v *= self.mom
            v += g
            p -= self.lr * v

    def step(self) -> None:
        self.forward_backward()
        self.update()

    def probe(self) -> Probe:
        loss = self.forward_backward()
        grads = {n: g.copy() for n, g in zip(self.names, self.grads)}
        self.update()
        return Probe(loss, grads, {n: p.copy() for n, p in zip(self.names, self.params)})
