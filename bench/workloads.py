"""The workloads of ``shared/workloads.md`` (and W7, the MNIST convnet): their data, exactly
defined, with sizes as parameters so that tests can shrink them."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

LR = 0.05
MOMENTUM = 0.9
GELU_K = 0.7978845608
GELU_C = 0.044715


@dataclass
class MlpData:
    """A fixed batch and an MLP's initial parameters ``[W1, b1, W2, b2, ...]``."""

    x: np.ndarray
    y: np.ndarray
    params: list[np.ndarray]
    lr: float = LR
    momentum: float = MOMENTUM

    @property
    def param_names(self) -> list[str]:
        return [f"{'Wb'[i % 2]}{i // 2 + 1}" for i in range(len(self.params))]

    @property
    def onehot(self) -> np.ndarray:
        return one_hot(self.y, self.params[-1].shape[0], self.x.dtype)


@dataclass
class ConvData(MlpData):
    """W7: images (N, 1, H, W), labels, and ``[conv1 W, b, conv2 W, b, fc1 W, b, fc2 W, b]``
    (conv weights (out, in, 3, 3) as in PyTorch; linear weights (in, out) as everywhere here)."""


@dataclass
class OpData:
    """W2: two small vectors, both differentiated."""

    x: np.ndarray
    y: np.ndarray


@dataclass
class ChainData:
    """W3: one large vector, differentiated."""

    x: np.ndarray


@dataclass
class RnnData:
    """W5: inputs (time, batch, in) and the three differentiated parameters."""

    x: np.ndarray
    w_xh: np.ndarray
    w_hh: np.ndarray
    b: np.ndarray

    @property
    def param_names(self) -> list[str]:
        return ["W_xh", "W_hh", "b"]

    @property
    def params(self) -> list[np.ndarray]:
        return [self.w_xh, self.w_hh, self.b]


# W9's parameters in PyTorch's module order (the seq2seq tutorial's EncoderRNN and
# AttnDecoderRNN with BahdanauAttention), as (name, shape) with V the vocabulary, H the width
SEQ2SEQ_PARAMS = (
    ("encoder.embedding.weight", ("V", "H")),
    ("encoder.gru.weight_ih_l0", ("3H", "H")),
    ("encoder.gru.weight_hh_l0", ("3H", "H")),
    ("encoder.gru.bias_ih_l0", ("3H",)),
    ("encoder.gru.bias_hh_l0", ("3H",)),
    ("decoder.embedding.weight", ("V", "H")),
    ("decoder.attention.Wa.weight", ("H", "H")),
    ("decoder.attention.Wa.bias", ("H",)),
    ("decoder.attention.Ua.weight", ("H", "H")),
    ("decoder.attention.Ua.bias", ("H",)),
    ("decoder.attention.Va.weight", ("1", "H")),
    ("decoder.attention.Va.bias", ("1",)),
    ("decoder.gru.weight_ih_l0", ("3H", "2H")),
    ("decoder.gru.weight_hh_l0", ("3H", "H")),
    ("decoder.gru.bias_ih_l0", ("3H",)),
    ("decoder.gru.bias_hh_l0", ("3H",)),
    ("decoder.out.weight", ("V", "H")),
    ("decoder.out.bias", ("V",)),
)
SOS_TOKEN = 0  # the decoder's first input (the tutorial's SOS_token)


@dataclass
class Seq2SeqData:
    """W9: one sentence pair (source and target token ids) and the encoder-decoder's
    parameters in PyTorch's layout and module order."""

    src: np.ndarray
    tgt: np.ndarray
    params: list[np.ndarray]
    lr: float = 0.01

    @property
    def param_names(self) -> list[str]:
        return [name for name, _ in SEQ2SEQ_PARAMS]

    @property
    def hidden(self) -> int:
        return self.params[0].shape[1]

    @property
    def vocab(self) -> int:
        return self.params[0].shape[0]


@dataclass
class TransformerData:
    """W8: a fixed batch of token ids (16, 65) and the causal LM's parameters by name, in
    module order (the token embedding doubles as the output head)."""

    tokens: np.ndarray
    params: list[np.ndarray]
    names: list[str]
    heads: int
    lr: float = 3e-4
    betas: tuple[float, float] = (0.9, 0.95)
    eps: float = 1e-8
    weight_decay: float = 0.1
    max_norm: float = 1.0

    @property
    def param_names(self) -> list[str]:
        return self.names

    @property
    def layers(self) -> int:
        return sum(1 for n in self.names if n.endswith(".qkv.weight"))


def transformer_names(layers: int) -> list[str]:
    """W8's parameter names in module order."""
    names = ["tok_emb.weight", "pos_emb.weight"]
    for i in range(layers):
        b = f"blocks.{i}."
        names += [b + "ln1.weight", b + "ln1.bias", b + "qkv.weight", b + "qkv.bias",
                  b + "proj.weight", b + "proj.bias", b + "ln2.weight", b + "ln2.bias",
                  b + "fc1.weight", b + "fc1.bias", b + "fc2.weight", b + "fc2.bias"]
    return names + ["ln_f.weight", "ln_f.bias"]


@dataclass
class Workload:
    """One row of the performance table: a key, a kind of computation, and its data maker."""

    key: str
    name: str
    kind: str  # "mlp" | "op" | "chain" | "rnn" | "rnn_while" | "conv": the implementation used
    make: Callable[..., Any]
    sizes: dict[str, int] = field(default_factory=dict)
    tiny: dict[str, int] = field(default_factory=dict)

    def data(self, tiny: bool = False, **sizes: int) -> Any:
        """Build the workload's inputs at its default (or tiny) sizes, overridden by ``sizes``."""
        kw = dict(self.tiny if tiny else self.sizes)
        kw.update(sizes)
        return self.make(**kw)


def one_hot(y: np.ndarray, classes: int, dtype: Any = np.float32) -> np.ndarray:
    """Rows of the identity matrix picked by the integer labels ``y``."""
    out = np.zeros((y.shape[0], classes), dtype=dtype)
    out[np.arange(y.shape[0]), y] = 1
    return out


def mlp_init(sizes: list[int], seed: int) -> list[np.ndarray]:
    """The MLP init of workloads.md: one stream; per layer W then b, U(+-1/sqrt(in)), as f32."""
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        k = 1.0 / np.sqrt(n_in)
        params.append(rng.uniform(-k, k, (n_in, n_out)).astype(np.float32))
        params.append(rng.uniform(-k, k, (n_out,)).astype(np.float32))
    return params


@functools.lru_cache(maxsize=1)
def digits_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's digits, split 1437/360 and standardised with the training statistics
    (cached: callers copy what they change)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=0)
    mean = X_tr.mean(axis=0)
    std = X_tr.std(axis=0)  # population std
    std[std == 0] = 1.0  # a constant feature is only centred
    X_tr = ((X_tr - mean) / std).astype(np.float32)
    X_te = ((X_te - mean) / std).astype(np.float32)
    return X_tr, y_tr.astype(np.int64), X_te, y_te.astype(np.int64)


def make_w1(batch: int = 64, hidden: int = 256) -> MlpData:
    X_tr, y_tr, _, _ = digits_split()
    return MlpData(X_tr[:batch].copy(), y_tr[:batch].copy(), mlp_init([64, hidden, hidden, 10], 0))


def make_w2(n: int = 16) -> OpData:
    rng = np.random.default_rng(2)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    return OpData(x, y)


def make_w3(n: int = 1_000_000) -> ChainData:
    return ChainData(np.random.default_rng(3).standard_normal(n).astype(np.float32))


def make_w4(batch: int = 1024, n_in: int = 784, hidden: int = 1024, classes: int = 10) -> MlpData:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((batch, n_in)).astype(np.float32)
    y = rng.integers(0, classes, batch).astype(np.int64)
    return MlpData(x, y, mlp_init([n_in, hidden, hidden, classes], 4))


def make_w5(steps: int = 50, batch: int = 32, n_in: int = 32, hidden: int = 64) -> RnnData:
    rng = np.random.default_rng(5)
    k = 1.0 / np.sqrt(hidden)  # 1/8 at the defined size
    x = rng.standard_normal((steps, batch, n_in)).astype(np.float32)
    w_xh = rng.uniform(-k, k, (n_in, hidden)).astype(np.float32)
    w_hh = rng.uniform(-k, k, (hidden, hidden)).astype(np.float32)
    b = rng.uniform(-k, k, (hidden,)).astype(np.float32)
    return RnnData(x, w_xh, w_hh, b)


def make_w7(batch: int = 64, size: int = 28, c1: int = 32, c2: int = 64, hidden: int = 128,
            classes: int = 10) -> ConvData:
    """pytorch/examples' MNIST ``Net`` on random 28x28 images: conv 3x3 1->c1, ReLU, conv 3x3
    c1->c2, ReLU, max-pool 2, flatten, linear -> hidden, ReLU, linear -> classes (dropout off).
    One stream ``default_rng(7)``: images, labels, then per layer W then b, U(+-1/sqrt(fan_in))."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((batch, 1, size, size)).astype(np.float32)
    y = rng.integers(0, classes, batch).astype(np.int64)
    pooled = (size - 4) // 2
    shapes = [(c1, 1, 3, 3), (c2, c1, 3, 3), (c2 * pooled * pooled, hidden), (hidden, classes)]
    params = []
    for shape in shapes:
        fan_in = int(np.prod(shape[1:])) if len(shape) == 4 else shape[0]
        k = 1.0 / np.sqrt(fan_in)
        out = shape[0] if len(shape) == 4 else shape[1]
        params.append(rng.uniform(-k, k, shape).astype(np.float32))
        params.append(rng.uniform(-k, k, (out,)).astype(np.float32))
    return ConvData(x, y, params)


def make_w8(vocab: int = 65, context: int = 64, layers: int = 4, heads: int = 4,
            width: int = 128, batch: int = 16) -> TransformerData:
    """W8 (shared/workloads.md): every Linear and Embedding weight N(0, 0.02) from one stream
    ``default_rng(8)`` in module order (token and position embeddings, then each block's qkv,
    proj, fc1, fc2), biases 0, LayerNorm weight 1 and bias 0; the batch from
    ``default_rng(80)``. A final LayerNorm comes before the tied output head, as in nanoGPT."""
    rng = np.random.default_rng(8)
    shapes = {"tok_emb.weight": (vocab, width), "pos_emb.weight": (context, width)}
    for i in range(layers):
        b = f"blocks.{i}."
        shapes.update({b + "qkv.weight": (3 * width, width), b + "proj.weight": (width, width),
                       b + "fc1.weight": (4 * width, width), b + "fc2.weight": (width, 4 * width)})
    drawn = {n: rng.normal(0.0, 0.02, shape).astype(np.float32) for n, shape in shapes.items()}
    names = transformer_names(layers)
    params = []
    for n in names:
        if n in drawn:
            params.append(drawn[n])
        else:
            size = {"qkv": 3 * width, "fc1": 4 * width}.get(n.split(".")[-2], width)
            fill = 1.0 if n.endswith(".weight") else 0.0  # LayerNorm weight; every bias 0
            params.append(np.full(size, fill, np.float32))
    tokens = np.random.default_rng(80).integers(0, vocab, (batch, context + 1))
    return TransformerData(tokens, params, names, heads)


def make_w9(vocab: int = 1000, hidden: int = 128, length: int = 10) -> Seq2SeqData:
    """The seq2seq tutorial's model at batch 1: every parameter U(+-1/sqrt(hidden)) from one
    stream ``default_rng(9)`` in module order; source and target from their own streams."""
    rng = np.random.default_rng(9)
    k = 1.0 / np.sqrt(hidden)
    size = {"V": vocab, "H": hidden, "2H": 2 * hidden, "3H": 3 * hidden, "1": 1}
    params = [rng.uniform(-k, k, tuple(size[d] for d in dims)).astype(np.float32)
              for _, dims in SEQ2SEQ_PARAMS]
    src = np.random.default_rng(90).integers(2, vocab, length)
    tgt = np.random.default_rng(91).integers(2, vocab, length)
    return Seq2SeqData(src, tgt, params)


WORKLOADS: dict[str, Workload] = {
    w.key: w
    for w in [
        Workload("W1", "mlp-digits", "mlp", make_w1, {}, {"batch": 8, "hidden": 16}),
        Workload("W2", "op-overhead", "op", make_w2, {}, {"n": 16}),
        Workload("W3", "elementwise-chain", "chain", make_w3, {}, {"n": 1000}),
        Workload(
            "W4", "mlp-large", "mlp", make_w4, {},
            {"batch": 16, "n_in": 20, "hidden": 32, "classes": 10},
        ),
        Workload("W5", "rnn-loop", "rnn", make_w5, {}, {"steps": 4, "batch": 3, "n_in": 5,
                                                       "hidden": 6}),
        # W6: W5 with the step count a tensor (a graph loop, not an unrolled trace)
        Workload("W6", "rnn-while", "rnn_while", make_w5, {}, {"steps": 4, "batch": 3,
                                                              "n_in": 5, "hidden": 6}),
        Workload("W7", "mnist-convnet", "conv", make_w7, {},
                 {"batch": 2, "size": 8, "c1": 2, "c2": 3, "hidden": 5, "classes": 4}),
        Workload("W8", "transformer-lm", "transformer", make_w8, {},
                 {"vocab": 7, "context": 4, "layers": 1, "heads": 2, "width": 4, "batch": 2}),
        Workload("W9", "seq2seq-batch1", "seq2seq", make_w9, {},
                 {"vocab": 8, "hidden": 3, "length": 2}),
    ]
}
