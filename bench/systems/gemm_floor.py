"""The GEMM floor of an MLP step: only its matrix products (forward, weight-gradient and
input-gradient GEMMs of the same shapes, into preallocated outputs). Not an answer: a lower
bound for a NumPy backend, timed beside the systems and never checked."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.systems.base import Probe, Unavailable
from bench.workloads import MlpData


class GemmFloor:
    """The 2L - 1 (data needs no gradient) + L GEMMs of an L-layer MLP step."""

    note = "the step's GEMMs alone (3 forward, 3 weight-gradient, 2 input-gradient for W4)"

    def __init__(self, d: MlpData) -> None:
        self.x = d.x
        self.Ws = [p.copy() for p in d.params[0::2]]
        n, dt = d.x.shape[0], d.x.dtype
        self.acts = [np.empty((n, W.shape[1]), dt) for W in self.Ws]
        self.deltas = [np.empty((n, W.shape[1]), dt) for W in self.Ws]
        self.grads = [np.empty_like(W) for W in self.Ws]

    def step(self) -> None:
        h = self.x
        for W, z in zip(self.Ws, self.acts):
            np.matmul(h, W, out=z)
            h = z
        for i in reversed(range(len(self.Ws))):
            h_in = self.acts[i - 1] if i > 0 else self.x
            np.matmul(h_in.T, self.deltas[i], out=self.grads[i])
            if i > 0:
                np.matmul(self.deltas[i], self.Ws[i].T, out=self.deltas[i - 1])

    def probe(self) -> Probe:
        raise Unavailable("gemm-floor computes no loss: it is a floor, not an answer")


def build(kind: str, data: Any) -> GemmFloor:
    """The GEMM floor for an MLP workload (other kinds have none)."""
    if kind != "mlp":
        raise Unavailable(f"no GEMM floor defined for a {kind!r} workload")
    return GemmFloor(data)
