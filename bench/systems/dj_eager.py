"""dongjing eager: the public define-by-run API, manual momentum SGD under ``dj.no_grad()``.
``device`` (None: the CPU; "cuda" for the GPU benchmark) is where every tensor is made."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.systems.base import Probe
from bench.systems.dj_common import (
    ce_note,
    chain,
    convnet_forward,
    cross_entropy,
    import_dj,
    mlp_forward,
    rnn,
)
from bench.systems.seq2seq_model import EagerSeq2Seq
from bench.systems.transformer_model import EagerTransformer
from bench.workloads import ChainData, MlpData, OpData, RnnData, one_hot


def _np(t: Any) -> np.ndarray:
    return np.array(t.cpu().numpy(), copy=True)


class Mlp:
    forward = staticmethod(mlp_forward)

    def __init__(self, dj: Any, d: MlpData, device: Any = None) -> None:
        self.dj, self.device = dj, device
        self.note = ce_note(dj) + ", manual SGD in no_grad"
        self.names = d.param_names
        self.params = [dj.tensor(p.copy(), requires_grad=True, device=device) for p in d.params]
        self.vels = [dj.tensor(np.zeros_like(p), device=device) for p in d.params]
        self.lr, self.mom = d.lr, d.momentum
        self.classes = d.params[-1].shape[0]
        self.set_batch(d.x, d.y)

    def set_batch(self, x: np.ndarray, y: np.ndarray) -> None:
        dj, device = self.dj, self.device
        self.x, self.y = dj.tensor(x, device=device), dj.tensor(y, device=device)
        self.onehot = dj.tensor(one_hot(y, self.classes, x.dtype), device=device)

    def logits(self, x: np.ndarray) -> np.ndarray:
        with self.dj.no_grad():
            return _np(self.forward(self.dj, self.dj.tensor(x, device=self.device), self.params))

    def _fb(self) -> Any:
        for p in self.params:
            p.grad = None
        logits = self.forward(self.dj, self.x, self.params)
        loss = cross_entropy(self.dj, logits, self.y, self.onehot)
        loss.backward()
        return loss

    def update(self) -> None:
        with self.dj.no_grad():
            for p, v in zip(self.params, self.vels):
                v *= self.mom
                v += p.grad
                p -= self.lr * v

    def step(self) -> None:
        self._fb()
        self.update()

    def probe(self) -> Probe:
        loss = self._fb()
        grads = {n: _np(p.grad) for n, p in zip(self.names, self.params)}
        self.update()
        return Probe(loss.item(), grads, {n: _np(p) for n, p in zip(self.names, self.params)})


class Conv(Mlp):
    """W7: the convnet in place of the MLP, the same loss and update."""

    forward = staticmethod(convnet_forward)


class Op:
    note = ""

    def __init__(self, dj: Any, d: OpData, device: Any = None) -> None:
        self.x = dj.tensor(d.x.copy(), requires_grad=True, device=device)
        self.y = dj.tensor(d.y.copy(), requires_grad=True, device=device)

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

    def __init__(self, dj: Any, d: ChainData, device: Any = None) -> None:
        self.dj = dj
        self.x = dj.tensor(d.x.copy(), requires_grad=True, device=device)

    def step(self) -> Any:
        self.x.grad = None
        loss = chain(self.dj, self.x)
        loss.backward()
        return loss

    def probe(self) -> Probe:
        loss = self.step()
        return Probe(loss.item(), {"x": _np(self.x.grad)})


class Rnn:
    note = ""

    def __init__(self, dj: Any, d: RnnData, device: Any = None) -> None:
        self.dj, self.device = dj, device
        self.x = dj.tensor(d.x.copy(), device=device)
        self.names = d.param_names
        self.params = [dj.tensor(p.copy(), requires_grad=True, device=device) for p in d.params]
        self.steps = d.x.shape[0]
        self.h0 = (d.x.shape[1], d.w_hh.shape[0])

    def step(self) -> Any:
        for p in self.params:
            p.grad = None
        h = self.dj.zeros(self.h0, device=self.device)
        loss = rnn(self.dj, self.x, h, *self.params, self.steps)
        loss.backward()
        return loss

    def probe(self) -> Probe:
        loss = self.step()
        return Probe(loss.item(), {n: _np(p.grad) for n, p in zip(self.names, self.params)})


def build(kind: str, data: Any, device: Any = None) -> Any:
    """A dongjing eager runner for a workload kind, its tensors on ``device``."""
    dj = import_dj()
    return {"mlp": Mlp, "op": Op, "chain": Chain, "rnn": Rnn, "rnn_while": Rnn,
            "conv": Conv, "seq2seq": EagerSeq2Seq,
            "transformer": EagerTransformer}[kind](dj, data, device)
