"""dongjing with the model under ``dj.jit`` and everything else eager: the forward (the model, or
the workload's loss function) is compiled, ``backward()`` runs its compiled gradient program
through the eager tape, and the update is the eager system's manual momentum SGD."""

from __future__ import annotations

from typing import Any

from bench.systems import dj_eager
from bench.systems.base import Unavailable
from bench.systems.dj_common import (
    ce_note,
    chain,
    convnet_forward,
    cross_entropy,
    import_dj,
    rnn,
)
from bench.systems.seq2seq_model import EagerSeq2Seq, seq2seq_loss
from bench.systems.transformer_model import EagerTransformer, lm_loss


class Mlp(dj_eager.Mlp):
    def __init__(self, dj: Any, d: Any, device: Any = None) -> None:
        super().__init__(dj, d, device)
        self.note = ce_note(dj) + ", dj.jit(model) + eager loss/backward, manual SGD in no_grad"
        self.model = dj.jit(lambda x: self.forward(dj, x, self.params))

    def _fb(self) -> Any:
        for p in self.params:
            p.grad = None
        loss = cross_entropy(self.dj, self.model(self.x), self.y, self.onehot)
        loss.backward()
        return loss


class Conv(Mlp):
    """W7: the convnet jitted, the same eager loss, backward and update."""

    forward = staticmethod(convnet_forward)


class Op(dj_eager.Op):
    note = "the function jitted, eager backward"

    def __init__(self, dj: Any, d: Any, device: Any = None) -> None:
        super().__init__(dj, d, device)
        self.fn = dj.jit(lambda x, y: (x * y + x).sum())

    def step(self) -> Any:
        self.x.grad = self.y.grad = None
        z = self.fn(self.x, self.y)
        z.backward()
        return z


class Chain(dj_eager.Chain):
    note = "the function jitted, eager backward"

    def __init__(self, dj: Any, d: Any, device: Any = None) -> None:
        super().__init__(dj, d, device)
        self.fn = dj.jit(lambda x: chain(dj, x))

    def step(self) -> Any:
        self.x.grad = None
        loss = self.fn(self.x)
        loss.backward()
        return loss


class Rnn(dj_eager.Rnn):
    note = "the unrolled recurrence jitted, eager backward"

    def __init__(self, dj: Any, d: Any, device: Any = None) -> None:
        super().__init__(dj, d, device)
        steps = self.steps
        self.fn = dj.jit(lambda x, h, w_xh, w_hh, b: rnn(dj, x, h, w_xh, w_hh, b, steps))

    def step(self) -> Any:
        for p in self.params:
            p.grad = None
        loss = self.fn(self.x, self.dj.zeros(self.h0, device=self.device), *self.params)
        loss.backward()
        return loss


class Seq2Seq(EagerSeq2Seq):
    note = "the loss (encoder and decoder loops, unrolled) jitted, eager backward, SGD in no_grad"

    def __init__(self, dj: Any, d: Any, device: Any = None) -> None:
        super().__init__(dj, d, device)
        length = self.length
        self.loss_fn = dj.jit(lambda src, tgt: seq2seq_loss(dj, self.model, src, tgt, length))


class Transformer(EagerTransformer):
    note = "the model and loss jitted, eager backward, clip_grad_norm_ and optim.AdamW"

    def __init__(self, dj: Any, d: Any, device: Any = None) -> None:
        super().__init__(dj, d, device)
        self.loss_fn = dj.jit(lambda idx, targets: lm_loss(dj, self.model, idx, targets))


def build(kind: str, data: Any, device: Any = None) -> Any:
    """A dongjing runner with the forward under dj.jit and an eager backward; its tensors
    on ``device`` (None: the CPU)."""
    dj = import_dj()
    if not hasattr(dj, "jit"):
        raise Unavailable("dj.jit is not there")
    # W6 (a tensor step count) runs as W5 here: the jitted forward unrolls the same 50 steps
    return {"mlp": Mlp, "op": Op, "chain": Chain, "rnn": Rnn, "rnn_while": Rnn,
            "conv": Conv, "seq2seq": Seq2Seq, "transformer": Transformer}[kind](dj, data, device)
