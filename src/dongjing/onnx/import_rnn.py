"""ONNX RNN / LSTM / GRU nodes as dongjing ops, unrolled over the (known) sequence length.

Layout 0: X is (seq, batch, input); W (dirs, gates*H, input), R (dirs, gates*H, H), B (dirs,
2*gates*H). Outputs Y (seq, dirs, batch, H), Y_h and Y_c (dirs, batch, H). Gate orders are
ONNX's: LSTM i, o, f, c; GRU z, r, h.
"""

from __future__ import annotations

from .. import ops
from .errors import OnnxImportError

_GATES = {"RNN": 1, "LSTM": 4, "GRU": 3}
_DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"],
                        "GRU": ["Sigmoid", "Tanh"]}


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _check(kind: str, ins: list, attrs: dict) -> None:
    acts = [_text(a).lower() for a in attrs.get("activations", [])]
    n = len(_DEFAULT_ACTIVATIONS[kind])
    defaults = [a.lower() for a in _DEFAULT_ACTIVATIONS[kind] * (len(acts) // n)]
    relu_rnn = kind == "RNN" and acts and set(acts) == {"relu"}  # PyTorch's RNN(relu)
    if acts and acts != defaults and not relu_rnn:
        raise OnnxImportError(f"activations {acts} are not supported (the defaults, or Relu "
                              "for RNN)")
    if attrs.get("clip") is not None:
        raise OnnxImportError("the clip attribute is not supported")
    if attrs.get("input_forget", 0):
        raise OnnxImportError("input_forget=1 is not supported")
    if kind == "LSTM" and len(ins) > 7 and ins[7] is not None:
        raise OnnxImportError("peephole weights (input P) are not supported")


def _gate(t, k: int, hidden: int):
    return t[..., k * hidden:(k + 1) * hidden]


def _step(kind: str, xw, h, c, r, rb, hidden: int, linear_before_reset: bool):
    """One time step: new (h, c) from the input's projection `xw` (bias included)."""
    # the recurrent bias joins R h before x: dongjing's (and PyTorch's) order of additions, so
    # a recurrent layer dongjing exported imports back bit for bit
    hr = ops.matmul(h, ops.transpose(r, -2, -1))
    if kind == "RNN":
        return ops.tanh(xw + (hr + rb)), None
    if kind == "RNN_RELU":
        return ops.relu(xw + (hr + rb)), None
    if kind == "LSTM":
        g = xw + (hr + rb)
        i, o = ops.sigmoid(_gate(g, 0, hidden)), ops.sigmoid(_gate(g, 1, hidden))
        f, cand = ops.sigmoid(_gate(g, 2, hidden)), ops.tanh(_gate(g, 3, hidden))
        c = f * c + i * cand
        return o * ops.tanh(c), c
    z = ops.sigmoid(_gate(xw, 0, hidden) + (_gate(hr, 0, hidden) + _gate(rb, 0, hidden)))
    rgate = ops.sigmoid(_gate(xw, 1, hidden) + (_gate(hr, 1, hidden) + _gate(rb, 1, hidden)))
    if linear_before_reset:
        cand = ops.tanh(_gate(xw, 2, hidden) + rgate * (_gate(hr, 2, hidden)
                                                        + _gate(rb, 2, hidden)))
    else:  # the reset gate applies before the recurrent product
        rh = ops.matmul(rgate * h, ops.transpose(r[2 * hidden:3 * hidden], -2, -1))
        cand = ops.tanh(_gate(xw, 2, hidden) + rh + _gate(rb, 2, hidden))
    return (1.0 - z) * cand + z * h, None


def recurrent(kind: str, ctx, ins: list, attrs: dict):
    """The outputs (Y, Y_h[, Y_c]) of an ONNX RNN, LSTM or GRU node."""
    _check(kind, ins, attrs)
    x, w, r = ins[0], ins[1], ins[2]
    b = ins[3] if len(ins) > 3 else None
    initial_h = ins[5] if len(ins) > 5 else None
    initial_c = ins[6] if kind == "LSTM" and len(ins) > 6 else None
    if attrs.get("layout", 0):
        x = ops.permute(x, (1, 0, 2))
    steps = x.shape[0]
    if steps is None:
        raise OnnxImportError(f"{kind}: the sequence length must be known ({x.shape})")
    if len(ins) > 4 and ins[4] is not None:
        lens = ctx.static(ins[4], "sequence_lens")
        if (lens != steps).any():
            raise OnnxImportError(f"{kind}: sequence_lens shorter than the input are not "
                                  "supported")
    hidden, gates = int(attrs["hidden_size"]), _GATES[kind]
    relu = [_text(a).lower() for a in attrs.get("activations", [])][:1] == ["relu"]
    step_kind = "RNN_RELU" if kind == "RNN" and relu else kind
    direction = _text(attrs.get("direction", "forward"))
    dirs = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}[direction]
    ys, hs, cs = [], [], []
    for d, backwards in enumerate(dirs):
        wd, rd = w[d], r[d]
        xw = ops.matmul(x, ops.transpose(wd, -2, -1))  # (seq, batch, gates*H) in one product
        rb = None
        if b is not None:
            xw = xw + b[d][:gates * hidden]
            rb = b[d][gates * hidden:]
        else:
            rb = ops.zeros_like(rd[:, 0])
        h = initial_h[d] if initial_h is not None else ops.zeros_like(_gate(xw[0], 0, hidden))
        c = None
        if kind == "LSTM":
            c = initial_c[d] if initial_c is not None else ops.zeros_like(h)
        outs = [None] * steps
        for t in (range(steps - 1, -1, -1) if backwards else range(steps)):
            h, c = _step(step_kind, xw[t], h, c, rd, rb, hidden,
                         bool(attrs.get("linear_before_reset", 0)))
            outs[t] = h
        ys.append(ops.stack(outs, 0))
        hs.append(h)
        cs.append(c)
    y = ops.stack(ys, 1)  # (seq, dirs, batch, H)
    if attrs.get("layout", 0):
        y = ops.permute(y, (2, 0, 1, 3))
        return (y, ops.permute(ops.stack(hs, 0), (1, 0, 2))) + (
            (ops.permute(ops.stack(cs, 0), (1, 0, 2)),) if kind == "LSTM" else ())
    return (y, ops.stack(hs, 0)) + ((ops.stack(cs, 0),) if kind == "LSTM" else ())
