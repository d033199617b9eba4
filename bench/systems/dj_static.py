"""dongjing static: build a Graph once, ``dj.gradients``, ``dj.assign``, run it in a Session at
an optimization level. Skips itself (with the reason) while that API is not there yet.
``device`` (None: the CPU; "cuda" for the GPU benchmark): the Variables are made there and the
feeds copied there once, so that the Session runs the graph on that device."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.systems.base import Probe, Unavailable, host
from bench.systems.dj_common import (
    ce_note,
    chain,
    convnet_forward,
    cross_entropy,
    functional_ce,
    import_dj,
    mlp_forward,
    rnn,
)
from bench.systems.seq2seq_model import build_model, seq2seq_loss
from bench.systems.transformer_model import build_model as build_lm
from bench.systems.transformer_model import lm_loss
from bench.workloads import (
    ChainData,
    MlpData,
    OpData,
    RnnData,
    Seq2SeqData,
    TransformerData,
    one_hot,
)

API = ("Graph", "placeholder", "Variable", "constant", "gradients", "Session")


def variable(dj: Any, value: np.ndarray, device: Any = None, **kw: Any) -> Any:
    """``dj.Variable(value, **kw)``, made on ``device`` when one is given."""
    if device is None:
        return dj.Variable(value, **kw)
    try:
        return dj.Variable(value, device=device, **kw)
    except TypeError as e:
        if "device" not in str(e):
            raise
        if str(device) == "cpu":  # where a Variable is made anyway
            return dj.Variable(value, **kw)
        raise Unavailable(f"dj.Variable does not take device= yet ({e})") from e


def to_device(value: Any, device: Any = None) -> Any:
    """A feed value copied to ``device`` once (a CuPy array on "cuda"); a host scalar (a loop
    count) and any value for the CPU stay as they are."""
    if device is None or str(device) == "cpu" or np.ndim(value) == 0:
        return value
    try:
        import cupy
    except ImportError as e:
        raise Unavailable(f"feeds for {device} need CuPy ({e})") from e
    return cupy.asarray(value)


def sgd_updates(dj: Any, params: list[Any], grads: list[Any], shapes: list[tuple[int, ...]],
                lr: float, mom: float, device: Any = None) -> list[Any]:
    """Momentum SGD (PyTorch convention) as assignments: v <- mom v + g; p <- p - lr v."""
    updates = []
    for p, g, shape in zip(params, grads, shapes):
        v = variable(dj, np.zeros(shape, np.float32), device, trainable=False)
        v_new = dj.assign(v, mom * v + g)
        updates.append(dj.assign(p, p - lr * v_new))
    return updates


class _Static:
    """A graph, its session, the fetches of a timed step and of a probe, and the feed."""

    note = ""

    def __init__(self, dj: Any, level: int, device: Any = None) -> None:
        self.dj, self.level, self.device = dj, level, device
        self.graph = dj.Graph()
        self.feed: dict[Any, Any] = {}
        self.grad_names: list[str] = []
        self.variables: list[Any] = []
        with self.graph.as_default():
            self.loss, self.grads, self.extra = self.define()
        self.feed = {k: to_device(v, device) for k, v in self.feed.items()}
        self.sess = dj.Session(self.graph, optimize=level)

    def define(self) -> tuple[Any, list[Any], list[Any]]:
        """Add the nodes; return the loss, its gradients and other fetches of a step."""
        raise NotImplementedError

    def fetches(self) -> list[Any]:
        return [self.loss, *self.grads, *self.extra]

    def step(self) -> None:
        self.sess.run(self.fetches(), feed_dict=self.feed)

    def probe(self) -> Probe:
        out = self.sess.run([self.loss, *self.grads, *self.extra], feed_dict=self.feed)
        self.fetched_loss = out[0]  # as the Session returns it (where it was computed)
        grads = {n: host(g) for n, g in zip(self.grad_names, out[1:1 + len(self.grads)])}
        params = {}
        if self.variables:
            values = self.sess.run(list(self.variables))
            params = {n: host(v) for n, v in zip(self.param_names, values)}
        return Probe(float(host(out[0])), grads, params)


class Mlp(_Static):
    """The training step: loss, gradients and updates in one graph; a step fetches the loss and
    the updates; a probe also fetches the gradients."""

    forward = staticmethod(mlp_forward)

    def __init__(self, dj: Any, d: MlpData, level: int, any_batch: bool = False,
                 device: Any = None) -> None:
        self.d, self.any_batch = d, any_batch
        super().__init__(dj, level, device)

    def define(self) -> tuple[Any, list[Any], list[Any]]:
        dj, d = self.dj, self.d
        n = None if self.any_batch else d.x.shape[0]  # fixed shapes unless batches vary
        self.x = dj.placeholder((n, *d.x.shape[1:]), dj.float32, name="x")
        self.y = dj.placeholder((n,), dj.int64, name="y")
        self.onehot = None
        if functional_ce(dj) is None:
            classes = d.params[-1].shape[0]
            self.onehot = dj.placeholder((n, classes), dj.float32, name="onehot")
        self.set_batch(d.x, d.y)
        self.param_names = self.grad_names = d.param_names
        self.variables = [variable(dj, p.copy(), self.device, name=n)
                          for p, n in zip(d.params, d.param_names)]
        self.logits_node = self.forward(dj, self.x, self.variables)
        loss = cross_entropy(dj, self.logits_node, self.y, self.onehot)
        grads = list(dj.gradients(loss, self.variables))
        shapes = [p.shape for p in d.params]
        updates = sgd_updates(dj, self.variables, grads, shapes, d.lr, d.momentum, self.device)
        self.train_op = dj.group(*updates) if hasattr(dj, "group") else updates
        self.note = ce_note(dj) + ", dj.assign updates"
        return loss, grads, updates

    def set_batch(self, x: np.ndarray, y: np.ndarray) -> None:
        self.feed = {self.x: x, self.y: y}
        if self.onehot is not None:
            self.feed[self.onehot] = one_hot(y, self.d.params[-1].shape[0], x.dtype)
        self.feed = {k: to_device(v, self.device) for k, v in self.feed.items()}

    def logits(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.sess.run(self.logits_node, feed_dict={self.x: x}))

    def fetches(self) -> list[Any]:
        train = self.train_op if isinstance(self.train_op, list) else [self.train_op]
        return [self.loss, *train]


class Conv(Mlp):
    """W7: the convnet's training step in one graph."""

    forward = staticmethod(convnet_forward)


class Op(_Static):
    def __init__(self, dj: Any, d: OpData, level: int, device: Any = None) -> None:
        self.d = d
        super().__init__(dj, level, device)

    def define(self) -> tuple[Any, list[Any], list[Any]]:
        dj, d = self.dj, self.d
        x = dj.placeholder(d.x.shape, dj.float32, name="x")
        y = dj.placeholder(d.y.shape, dj.float32, name="y")
        self.feed = {x: d.x, y: d.y}
        self.grad_names = ["x", "y"]
        z = (x * y + x).sum()
        return z, list(dj.gradients(z, [x, y])), []


class Chain(_Static):
    def __init__(self, dj: Any, d: ChainData, level: int, device: Any = None) -> None:
        self.d = d
        super().__init__(dj, level, device)

    def define(self) -> tuple[Any, list[Any], list[Any]]:
        dj, d = self.dj, self.d
        x = dj.placeholder(d.x.shape, dj.float32, name="x")
        self.feed = {x: d.x}
        self.grad_names = ["x"]
        loss = chain(dj, x)
        return loss, list(dj.gradients(loss, [x])), []


class Rnn(_Static):
    note = "loop unrolled"

    def __init__(self, dj: Any, d: RnnData, level: int, device: Any = None) -> None:
        self.d = d
        super().__init__(dj, level, device)

    def define(self) -> tuple[Any, list[Any], list[Any]]:
        dj, d = self.dj, self.d
        x = dj.placeholder(d.x.shape, dj.float32, name="x")
        self.feed = {x: d.x}
        self.grad_names = d.param_names
        params = [variable(dj, p.copy(), self.device, name=n)
                  for p, n in zip(d.params, d.param_names)]
        h0 = dj.constant(np.zeros((d.x.shape[1], d.w_hh.shape[0]), np.float32))
        loss = rnn(dj, x, h0, *params, d.x.shape[0])
        return loss, list(dj.gradients(loss, params)), []


class RnnWhile(Rnn):
    """W6: the step count is a fed tensor, so the recurrence is one dj.while_loop (its body
    compiled like the rest of the graph; gradients through it without a bound)."""

    note = "dj.while_loop, steps fed as a tensor"

    def define(self) -> tuple[Any, list[Any], list[Any]]:
        dj, d = self.dj, self.d
        x = dj.placeholder(d.x.shape, dj.float32, name="x")
        steps = dj.placeholder((), dj.int64, name="steps")
        self.feed = {x: d.x, steps: np.int64(d.x.shape[0])}
        self.grad_names = d.param_names
        w_xh, w_hh, b = [variable(dj, p.copy(), self.device, name=n)
                         for p, n in zip(d.params, d.param_names)]
        h0 = dj.constant(np.zeros((d.x.shape[1], d.w_hh.shape[0]), np.float32))
        _, h = dj.while_loop(lambda t, h: t < steps,
                             lambda t, h: (t + 1, dj.tanh(x[t] @ w_xh + h @ w_hh + b)),
                             [dj.constant(np.int64(0)), h0])
        loss = h.sum()
        return loss, list(dj.gradients(loss, [w_xh, w_hh, b])), []


class Seq2Seq(_Static):
    """W9: the tutorial's modules called inside the graph (their Parameters become its
    Variables), both loops unrolled, SGD as assignments."""

    note = "nn modules in the graph, loops unrolled, dj.assign updates"

    def __init__(self, dj: Any, d: Seq2SeqData, level: int, device: Any = None) -> None:
        self.d = d
        super().__init__(dj, level, device)

    def define(self) -> tuple[Any, list[Any], list[Any]]:
        dj, d = self.dj, self.d
        model = build_model(dj, d, self.device)
        length = len(d.src)
        src = dj.placeholder((length,), dj.int64, name="src")
        tgt = dj.placeholder((length,), dj.int64, name="tgt")
        self.feed = {src: d.src.astype(np.int64), tgt: d.tgt.astype(np.int64)}
        self.param_names = self.grad_names = d.param_names
        named = dict(model.named_parameters())
        self.variables = [named[n] for n in d.param_names]
        loss = seq2seq_loss(dj, model, src, tgt, length)
        grads = list(dj.gradients(loss, self.variables))
        updates = [dj.assign(p, p - d.lr * g) for p, g in zip(self.variables, grads)]
        self.train_op = dj.group(*updates)
        return loss, grads, updates

    def fetches(self) -> list[Any]:
        return [self.loss, self.train_op]


def adamw_updates(dj: Any, params: list[Any], grads: list[Any], d: TransformerData) -> list[Any]:
    """clip_grad_norm_ (PyTorch's rule) then AdamW as assignments; the step count is a
    Variable, so the bias corrections are computed in the graph."""
    total = dj.sqrt(sum((g * g).sum() for g in grads))
    coef = dj.minimum(dj.constant(np.float32(1.0)), d.max_norm / (total + 1e-6))
    b1, b2 = d.betas
    count = dj.Variable(np.float32(0.0), trainable=False, name="adamw_step")
    t = dj.assign(count, count + 1.0)
    bc1 = 1.0 - dj.exp(t * float(np.log(b1)))
    root_bc2 = dj.sqrt(1.0 - dj.exp(t * float(np.log(b2))))
    updates = []
    for p, g in zip(params, grads):
        shape = tuple(p.shape)
        m = dj.Variable(np.zeros(shape, np.float32), trainable=False)
        v = dj.Variable(np.zeros(shape, np.float32), trainable=False)
        g = g * coef
        m_new = dj.assign(m, b1 * m + (1 - b1) * g)
        v_new = dj.assign(v, b2 * v + (1 - b2) * g * g)
        base = p * (1 - d.lr * d.weight_decay) if len(shape) == 2 else p
        updates.append(dj.assign(p, base - (d.lr / bc1) * m_new / (dj.sqrt(v_new) / root_bc2
                                                                   + d.eps)))
    return updates


class Transformer(_Static):
    """W8: the GPT modules called inside the graph, gradients, clipping and AdamW as
    assignments."""

    note = "nn modules in the graph, clipping and AdamW as dj.assign updates"

    def __init__(self, dj: Any, d: TransformerData, level: int, device: Any = None) -> None:
        self.d = d
        super().__init__(dj, level, device)

    def define(self) -> tuple[Any, list[Any], list[Any]]:
        dj, d = self.dj, self.d
        model = build_lm(dj, d)
        shape = (d.tokens.shape[0], d.tokens.shape[1] - 1)
        idx = dj.placeholder(shape, dj.int64, name="idx")
        targets = dj.placeholder(shape, dj.int64, name="targets")
        self.feed = {idx: d.tokens[:, :-1].astype(np.int64),
                     targets: d.tokens[:, 1:].astype(np.int64)}
        self.param_names = self.grad_names = d.param_names
        named = dict(model.named_parameters())
        self.variables = [named[n] for n in d.param_names]
        loss = lm_loss(dj, model, idx, targets)
        grads = list(dj.gradients(loss, self.variables))
        updates = adamw_updates(dj, self.variables, grads, d)
        self.train_op = dj.group(*updates)
        return loss, grads, updates

    def fetches(self) -> list[Any]:
        return [self.loss, self.train_op]


def build(kind: str, data: Any, level: int = 2, any_batch: bool = False,
          device: Any = None) -> Any:
    """A dongjing static runner for a workload kind at optimization level ``level``;
    ``any_batch``: MLP placeholders accept any batch size (for the accuracy run); ``device``:
    where its Variables and feeds live (None: the CPU)."""
    dj = import_dj()
    missing = [name for name in API if not hasattr(dj, name)]
    if missing:
        raise Unavailable("static API not there yet: dj." + ", dj.".join(missing))
    if kind in ("mlp", "conv") and not hasattr(dj, "assign"):
        raise Unavailable("static API not there yet: dj.assign")
    if kind in ("mlp", "conv"):
        return (Mlp if kind == "mlp" else Conv)(dj, data, level, any_batch, device)
    runner = {"op": Op, "chain": Chain, "rnn": Rnn, "rnn_while": RnnWhile,
              "seq2seq": Seq2Seq, "transformer": Transformer}[kind]
    return runner(dj, data, level, device)
