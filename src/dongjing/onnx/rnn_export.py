"""Recurrent layers (nn.RNN, nn.LSTM, nn.GRU) exported as ONNX `RNN` / `LSTM` / `GRU` nodes, one
per layer, so the exported model takes any sequence length (give the time dim in
`dynamic_axes`) instead of an unrolled, fixed-length chain.

While `dj.onnx.export` traces, each recurrent module of the model runs `export_forward` instead
of its own forward: its weights are put in ONNX's gate order with one Gather each (the
parameters stay the initializers, under their names) and each layer is one `onnx_recurrent`
node, an op outside the op table that exists for export (its forward evaluates the ONNX
semantics with dongjing ops, so the traced graph still runs). The node's three results (Y,
Y_h, Y_c) are three dongjing nodes sharing one ONNX node.
"""

from __future__ import annotations

import contextlib

import numpy as np

from .. import ops
from ..core.registry import define
from ..dispatch import apply
from ..errors import ShapeError
from ..nn.module import Module
from ..nn.rnn import RNNBase
from ..ops.convert import as_tensor
from ..tensor import Tensor
from .import_rnn import recurrent

_ONNX_KIND = {"RNN_TANH": "RNN", "RNN_RELU": "RNN", "LSTM": "LSTM", "GRU": "GRU"}
# dongjing's (PyTorch's) gate blocks in ONNX's order: LSTM i,f,g,o -> i,o,f,c; GRU r,z,n -> z,r,h
_GATE_ORDER = {"RNN": [0], "LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2]}
_OUTPUTS = ("Y", "Y_h", "Y_c")


def _infer(x, w, r, *rest, kind, hidden, direction, output, has_bias, has_h0, has_c0):
    dirs = 2 if direction == "bidirectional" else 1
    if output == "Y":
        return (x.shape[0], dirs, x.shape[1], hidden), x.dtype
    return (dirs, x.shape[1], hidden), x.dtype


def _inputs(ins: list, has_bias: bool, has_h0: bool, has_c0: bool) -> list:
    """The ONNX node's inputs (X, W, R, B, sequence_lens, initial_h, initial_c) from ours."""
    rest = list(ins[3:])
    out = list(ins[:3])
    out.append(rest.pop(0) if has_bias else "")
    out.append("")  # sequence_lens: every sequence runs the full length
    out.append(rest.pop(0) if has_h0 else "")
    out.append(rest.pop(0) if has_c0 else "")
    while out[-1] == "":
        out.pop()
    return out


def _attrs(node) -> dict:
    a = node.attrs
    attrs = {"hidden_size": a["hidden"], "direction": a["direction"]}
    if a["kind"] == "RNN_RELU":
        attrs["activations"] = ["Relu"] * (2 if a["direction"] == "bidirectional" else 1)
    if a["kind"] == "GRU":
        attrs["linear_before_reset"] = 1  # PyTorch's GRU applies the reset gate after R h
    return attrs


def _emit(e, node, ins):
    """One ONNX node for the Y, Y_h and Y_c nodes of one layer (the first one met emits it)."""
    a = node.attrs
    key = (tuple(id(i) for i in node.inputs),
           tuple(sorted((k, v) for k, v in a.items() if k != "output")))
    shared = e.__dict__.setdefault("_recurrent_outputs", {})
    if key not in shared:
        kind = _ONNX_KIND[a["kind"]]
        n_out = 3 if kind == "LSTM" else 2
        shared[key] = e.node(kind, _inputs(ins, a["has_bias"], a["has_h0"], a["has_c0"]),
                             n_out=n_out, name=node.name, **_attrs(node))
    return shared[key][_OUTPUTS.index(a["output"])]


def _forward(xp, *arrays, kind, hidden, direction, output, has_bias, has_h0, has_c0):
    tensors = [Tensor._make(a) for a in arrays]
    ins = _inputs(tensors, has_bias, has_h0, has_c0)
    ins = [None if isinstance(t, str) else t for t in ins]
    attrs = {"hidden_size": hidden, "direction": direction}
    if kind == "GRU":
        attrs["linear_before_reset"] = 1
    if kind == "RNN_RELU":
        attrs["activations"] = ["Relu"] * (2 if direction == "bidirectional" else 1)
    results = recurrent(_ONNX_KIND[kind], None, ins, attrs)
    return results[_OUTPUTS.index(output)]._data


RECURRENT = define("onnx_recurrent", forward=_forward, infer=_infer, onnx=_emit, table=False,
                   doc="One recurrent layer as ONNX computes it (exists for export).")


def _onnx_weights(module, layer: int, directions: int):
    """(W, R, B or None) of one layer, stacked over directions, gates in ONNX's order."""
    hidden = module.hidden_size
    order = _GATE_ORDER[_ONNX_KIND[module.mode]]
    index = Tensor._make(np.concatenate([np.arange(k * hidden, (k + 1) * hidden)
                                         for k in order]).astype(np.int64))
    def gates(t):
        return t if len(order) == 1 else ops.index_select(t, 0, index)

    def stack(ts):
        return ops.unsqueeze(ts[0], 0) if len(ts) == 1 else ops.stack(ts, 0)

    ws, rs, bs = [], [], []
    for suffix in ("", "_reverse")[:directions]:
        w_ih, w_hh, b_ih, b_hh = module._weights(layer, suffix)
        ws.append(gates(w_ih))
        rs.append(gates(w_hh))
        if b_ih is not None:
            bs.append(ops.concat([gates(b_ih), gates(b_hh)], 0))
    return stack(ws), stack(rs), (stack(bs) if bs else None)


def _layer(module, x, layer: int, directions: int, h0, c0) -> tuple:
    w, r, b = _onnx_weights(module, layer, directions)
    attrs = {"kind": module.mode, "hidden": module.hidden_size,
             "direction": "bidirectional" if directions == 2 else "forward",
             "has_bias": b is not None, "has_h0": h0 is not None, "has_c0": c0 is not None}
    ins = [t for t in (x, w, r, b, h0, c0) if t is not None]
    outs = [apply(RECURRENT, *ins, output=name, **attrs)
            for name in _OUTPUTS[:3 if module.mode == "LSTM" else 2]]
    return tuple(outs)


def export_forward(module, input, hx=None):
    """`RNNBase.forward` as ONNX recurrent nodes (any sequence length; inference only)."""
    x = as_tensor(input)
    batched = module._check_input(x)
    if not batched:
        x = ops.unsqueeze(x, 1)
    elif module.batch_first:
        x = ops.transpose(x, 0, 1)
    directions = 2 if module.bidirectional else 1
    lstm = module.mode == "LSTM"
    states = None
    if hx is not None:
        parts = list(hx) if lstm else [hx]
        if lstm and len(parts) != 2:
            raise TypeError("nn.LSTM: hx must be a tuple (h_0, c_0)")
        parts = [as_tensor(p) for p in parts]
        if any(p.ndim != (3 if batched else 2) for p in parts):
            raise ShapeError(f"nn.{type(module).__name__}: initial state of shape "
                             f"{parts[0].shape} does not fit the input {input.shape}")
        states = parts if batched else [ops.unsqueeze(p, 1) for p in parts]
    finals_h, finals_c = [], []
    for layer in range(module.num_layers):
        span = slice(layer * directions, (layer + 1) * directions)
        h0 = states[0][span] if states else None
        c0 = states[1][span] if states and lstm else None
        outs = _layer(module, x, layer, directions, h0, c0)
        y = outs[0]  # (seq, directions, batch, hidden)
        x = y[:, 0] if directions == 1 else ops.concat([y[:, 0], y[:, 1]], -1)
        finals_h.append(outs[1])
        if lstm:
            finals_c.append(outs[2])
    h_n = ops.concat(finals_h, 0) if len(finals_h) > 1 else finals_h[0]
    if lstm:
        h_n = (h_n, ops.concat(finals_c, 0) if len(finals_c) > 1 else finals_c[0])
    if not batched:
        x = ops.squeeze(x, 1)
        h_n = tuple(ops.squeeze(h, 1) for h in h_n) if lstm else ops.squeeze(h_n, 1)
    elif module.batch_first:
        x = ops.transpose(x, 0, 1)
    return x, h_n


@contextlib.contextmanager
def recurrent_nodes(model):
    """While open, the recurrent modules inside `model` (if it is a Module) trace as ONNX
    recurrent nodes (`export_forward`); their own forward is restored on exit."""
    patched = []
    if isinstance(model, Module):
        for m in model.modules():
            if isinstance(m, RNNBase) and "forward" not in m.__dict__:
                object.__setattr__(m, "forward",
                                   lambda *args, _m=m, **kw: export_forward(_m, *args, **kw))
                patched.append(m)
    try:
        yield
    finally:
        for m in patched:
            del m.__dict__["forward"]
