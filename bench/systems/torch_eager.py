"""PyTorch eager, written as a PyTorch user would (optional: skipped if torch is missing).
``device`` ("cpu", or "cuda" for the GPU benchmark) is where every tensor is made."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from bench.systems.base import Probe, Unavailable
from bench.systems.seq2seq_model import EagerSeq2Seq
from bench.systems.transformer_model import EagerTransformer
from bench.workloads import GELU_C, GELU_K, ChainData, MlpData, OpData, RnnData


def _torch() -> Any:
    try:
        import torch
    except ImportError as e:
        raise Unavailable(f"torch not importable ({e})") from e
    threads = int(os.environ.get("OMP_NUM_THREADS", "0") or 0)
    if threads > 0 and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return torch


def _np(t: Any) -> np.ndarray:
    return t.detach().cpu().numpy().copy()


class Mlp:
    note = "torch.optim.SGD, F.cross_entropy"

    def __init__(self, torch: Any, d: MlpData, device: str = "cpu") -> None:
        self.torch, self.device = torch, device
        self.names = d.param_names
        self.params = [torch.tensor(p, requires_grad=True, device=device) for p in d.params]
        self.opt = torch.optim.SGD(self.params, lr=d.lr, momentum=d.momentum)
        self.set_batch(d.x, d.y)

    def set_batch(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x = self.torch.from_numpy(x).to(self.device)
        self.y = self.torch.from_numpy(y).to(self.device)

    def _forward(self, x: Any) -> Any:
        h, P = x, self.params
        for i in range(0, len(P), 2):
            h = h @ P[i] + P[i + 1]
            if i + 2 < len(P):
                h = self.torch.relu(h)
        return h

    def logits(self, x: np.ndarray) -> np.ndarray:
        with self.torch.no_grad():
            return _np(self._forward(self.torch.from_numpy(x).to(self.device)))

    def _fb(self) -> Any:
        self.opt.zero_grad()
        loss = self.torch.nn.functional.cross_entropy(self._forward(self.x), self.y)
        loss.backward()
        return loss

    def step(self) -> None:
        self._fb()
        self.opt.step()

    def probe(self) -> Probe:
        loss = self._fb()
        grads = {n: _np(p.grad) for n, p in zip(self.names, self.params)}
        self.opt.step()
        return Probe(loss.item(), grads, {n: _np(p) for n, p in zip(self.names, self.params)})


class Conv(Mlp):
    """W7: pytorch/examples' MNIST Net (dropout off), linear layers as x @ W + b."""

    note = "F.conv2d, F.max_pool2d, torch.optim.SGD, F.cross_entropy"

    def _forward(self, x: Any) -> Any:
        F, P = self.torch.nn.functional, self.params
        h = F.relu(F.conv2d(x, P[0], P[1]))
        h = F.relu(F.conv2d(h, P[2], P[3]))
        h = self.torch.flatten(F.max_pool2d(h, 2), 1)
        h = F.relu(h @ P[4] + P[5])
        return h @ P[6] + P[7]


class Op:
    note = ""

    def __init__(self, torch: Any, d: OpData, device: str = "cpu") -> None:
        self.x = torch.tensor(d.x, requires_grad=True, device=device)
        self.y = torch.tensor(d.y, requires_grad=True, device=device)

    def step(self) -> Any:
        self.x.grad = self.y.grad = None
        z = (self.x * self.y + self.x).sum()
        z.backward()
        return z

    def probe(self) -> Probe:
        z = self.step()
        return Probe(z.item(), {"x": _np(self.x.grad), "y": _np(self.y.grad)})


class Chain:
    note = ""

    def __init__(self, torch: Any, d: ChainData, device: str = "cpu") -> None:
        self.torch = torch
        self.x = torch.tensor(d.x, requires_grad=True, device=device)

    def step(self) -> Any:
        x = self.x
        x.grad = None
        y = 0.5 * x * (1 + self.torch.tanh(GELU_K * (x + GELU_C * x**3)))
        loss = y.sum()
        loss.backward()
        return loss

    def probe(self) -> Probe:
        loss = self.step()
        return Probe(loss.item(), {"x": _np(self.x.grad)})


class Rnn:
    note = ""

    def __init__(self, torch: Any, d: RnnData, device: str = "cpu") -> None:
        self.torch, self.device = torch, device
        self.x = torch.from_numpy(d.x.copy()).to(device)
        self.names = d.param_names
        self.params = [torch.tensor(p, requires_grad=True, device=device) for p in d.params]
        self.h0 = (d.x.shape[1], d.w_hh.shape[0])

    def step(self) -> Any:
        w_xh, w_hh, b = self.params
        for p in self.params:
            p.grad = None
        h = self.torch.zeros(self.h0, device=self.device)
        for t in range(self.x.shape[0]):
            h = self.torch.tanh(self.x[t] @ w_xh + h @ w_hh + b)
        loss = h.sum()
        loss.backward()
        return loss

    def probe(self) -> Probe:
        loss = self.step()
        return Probe(loss.item(), {n: _np(p.grad) for n, p in zip(self.names, self.params)})


def build(kind: str, data: Any, device: str = "cpu") -> Any:
    """A PyTorch eager runner for a workload kind, its tensors on ``device``."""
    torch = _torch()
    if kind == "seq2seq":  # the same model code as dongjing's runner
        return EagerSeq2Seq(torch, data, None if device == "cpu" else device)
    if kind == "transformer":
        return EagerTransformer(torch, data)
    return {"mlp": Mlp, "op": Op, "chain": Chain, "rnn": Rnn, "rnn_while": Rnn,
            "conv": Conv}[kind](torch, data, device)
