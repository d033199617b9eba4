"""Recurrent layers: RNN, LSTM, GRU and their single-step cells, with PyTorch's parameter
names (`weight_ih_l0`, `bias_hh_l1_reverse`, ...) and gate order (LSTM i,f,g,o; GRU r,z,n), so a
PyTorch state dict loads as is. Built from dongjing ops: they run eagerly, in static graphs
(with a known sequence length) and under `dj.jit`."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import ops
from ..devices.device import check_device
from ..errors import ShapeError
from ..ops.convert import as_tensor
from ..tensor import Tensor
from ..tensor.transfer import constant_like
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter
from .utils.rnn import PackedSequence, pack_sorted, sequence_masks, unpack_sorted

if TYPE_CHECKING:
    from ..types import DeviceLike, DTypeLike

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _gate(x: Tensor, k: int, hidden: int) -> Tensor:
    """The k-th block of `hidden` columns of `x` (one gate's pre-activation)."""
    return x[..., k * hidden:(k + 1) * hidden]


def _fits(size, want) -> bool:
    """A dim matches unless both are known and differ."""
    return size is None or want is None or size == want


def _project(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    out = ops.matmul(x, ops.transpose(weight, 0, 1))
    return out if bias is None else out + bias


def rnn_step(mode: str, x_proj: Tensor, state, w_hh: Tensor, b_hh: Tensor | None):
    """One time step given the input already projected (`x @ W_ih.T + b_ih`), for `mode` in
    RNN_TANH, RNN_RELU, LSTM (state = (h, c)) or GRU; returns the new state."""
    if mode == "LSTM":
        h, c = state
        gates = x_proj + _project(h, w_hh, b_hh)
        hidden = h.shape[-1]
        i = ops.sigmoid(_gate(gates, 0, hidden))
        f = ops.sigmoid(_gate(gates, 1, hidden))
        g = ops.tanh(_gate(gates, 2, hidden))
        o = ops.sigmoid(_gate(gates, 3, hidden))
        c = f * c + i * g
        return o * ops.tanh(c), c
    h = state
    if mode == "GRU":
        hidden = h.shape[-1]
        h_proj = _project(h, w_hh, b_hh)
        r = ops.sigmoid(_gate(x_proj, 0, hidden) + _gate(h_proj, 0, hidden))
        z = ops.sigmoid(_gate(x_proj, 1, hidden) + _gate(h_proj, 1, hidden))
        n = ops.tanh(_gate(x_proj, 2, hidden) + r * _gate(h_proj, 2, hidden))
        return (1.0 - z) * n + z * h
    pre = x_proj + _project(h, w_hh, b_hh)
    return ops.tanh(pre) if mode == "RNN_TANH" else ops.relu(pre)


class RNNBase(Module):
    """Shared body of RNN, LSTM and GRU: layers x directions of one recurrence."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        super().__init__()
        name = type(self).__name__
        if proj_size:
            raise NotImplementedError(f"nn.{name}: proj_size is not supported in dongjing")
        if int(hidden_size) < 1 or int(num_layers) < 1:
            raise ValueError(f"nn.{name}: hidden_size and num_layers must be positive, got "
                             f"{hidden_size} and {num_layers}")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"nn.{name}: dropout must be in [0, 1], got {dropout}")

        check_device(device, f"nn.{name}")
        self.mode = mode
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        self.num_layers, self.bias = int(num_layers), bool(bias)
        self.batch_first, self.dropout = bool(batch_first), float(dropout)
        self.bidirectional, self.proj_size = bool(bidirectional), 0
        dtype = np.dtype(dtype or np.float32)
        gate_size = _GATES[mode] * self.hidden_size
        directions = 2 if bidirectional else 1
        for layer in range(self.num_layers):
            layer_in = self.input_size if layer == 0 else self.hidden_size * directions
            for suffix in ("", "_reverse")[:directions]:
                self.register_parameter(f"weight_ih_l{layer}{suffix}",
                                        Parameter(np.empty((gate_size, layer_in), dtype)))
                self.register_parameter(f"weight_hh_l{layer}{suffix}",
                                        Parameter(np.empty((gate_size, self.hidden_size), dtype)))
                if bias:
                    self.register_parameter(f"bias_ih_l{layer}{suffix}",
                                            Parameter(np.empty((gate_size,), dtype)))
                    self.register_parameter(f"bias_hh_l{layer}{suffix}",
                                            Parameter(np.empty((gate_size,), dtype)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def flatten_parameters(self) -> None:
        """PyTorch packs cuDNN weights here; dongjing's weights need no packing (a no-op)."""

    def _weights(self, layer: int, suffix: str):
        get = self._parameters.get
        return (get(f"weight_ih_l{layer}{suffix}"), get(f"weight_hh_l{layer}{suffix}"),
                get(f"bias_ih_l{layer}{suffix}"), get(f"bias_hh_l{layer}{suffix}"))

    def _check_input(self, x: Tensor) -> bool:
        """Validate `x`; True when it is batched (3-d)."""
        name = type(self).__name__
        if x.ndim not in (2, 3):
            raise ShapeError(f"nn.{name}: expects a 2-d (unbatched) or 3-d input, got shape "
                             f"{x.shape}")
        if x.shape[-1] is not None and x.shape[-1] != self.input_size:
            raise ShapeError(f"nn.{name}: input of shape {x.shape} has {x.shape[-1]} features, "
                             f"input_size is {self.input_size}")
        return x.ndim == 3

    def _initial(self, hx, x_proj: Tensor, batched: bool, directions: int):
        """Per (layer, direction) initial states; zeros (shaped from `x_proj`) when `hx` is None."""
        count = self.num_layers * directions
        name = type(self).__name__
        if hx is None:
            zero = ops.zeros_like(_gate(x_proj[0], 0, self.hidden_size))
            return [(zero, zero) if self.mode == "LSTM" else zero for _ in range(count)]
        parts = hx if self.mode == "LSTM" else (hx,)
        if self.mode == "LSTM" and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError("nn.LSTM: hx must be a tuple (h_0, c_0)")
        parts = [as_tensor(p) for p in parts]
        batch = x_proj.shape[1]
        for p in parts:
            want_dims = 3 if batched else 2
            if p.ndim != want_dims or not _fits(p.shape[0], count) or \
                    not _fits(p.shape[-1], self.hidden_size) or \
                    (batched and not _fits(p.shape[1], batch)):
                raise ShapeError(
                    f"nn.{name}: initial state of shape {p.shape} does not fit; expected "
                    f"({count}, {str(batch) + ', ' if batched else ''}{self.hidden_size})"
                )
        if not batched:
            parts = [ops.unsqueeze(p, 1) for p in parts]
        if self.mode == "LSTM":
            return [(parts[0][i], parts[1][i]) for i in range(count)]
        return [parts[0][i] for i in range(count)]

    def forward(self, input: Tensor | PackedSequence,
                hx: Tensor | tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor | PackedSequence, Tensor | tuple[Tensor, Tensor]]:
        """Run the recurrence over a (seq, batch, feature) input ((batch, seq, feature) with
        `batch_first`, or (seq, feature) unbatched, or a `PackedSequence`); returns (output,
        h_n), h_n = (h_n, c_n) for LSTM. A packed input gives a packed output, and each
        sequence's h_n is its state at its own last step."""
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        x = as_tensor(input)
        batched = self._check_input(x)
        if not batched:
            x = ops.unsqueeze(x, 1)
        elif self.batch_first:
            x = ops.transpose(x, 0, 1)
        steps = x.shape[0]
        if steps is None:
            raise ShapeError(f"nn.{type(self).__name__}: the sequence length must be known "
                             f"(input shape {input.shape}); give the placeholder a fixed length")
        x, h_n = self._recur(x, hx, batched)
        if not batched:
            x = ops.squeeze(x, 1)
            h_n = tuple(ops.squeeze(h, 1) for h in h_n) if self.mode == "LSTM" else \
                ops.squeeze(h_n, 1)
        elif self.batch_first:
            x = ops.transpose(x, 0, 1)
        return x, h_n

    def _forward_packed(self, packed: PackedSequence, hx):
        """The recurrence over a packed batch: padded in its sorted order, each sequence's
        state held after its last step, the padded outputs zero, the outputs packed again."""
        x, lengths = unpack_sorted(packed)
        self._check_input(x)
        order, back = packed.sorted_indices, packed.unsorted_indices
        if hx is not None and order is not None:
            hx = tuple(h[:, order] for h in hx) if self.mode == "LSTM" else hx[:, order]
        masks = constant_like(sequence_masks(lengths, x.shape[0]), x)
        out, h_n = self._recur(x, hx, True, masks)
        if back is not None:
            h_n = tuple(h[:, back] for h in h_n) if self.mode == "LSTM" else h_n[:, back]
        return packed._replace(data=pack_sorted(out, lengths)), h_n

    def _recur(self, x: Tensor, hx, batched: bool, masks: Tensor | None = None):
        """(outputs (T, B, directions * H), h_n) of time-major `x`; with `masks` (T, B, 1
        bools), a sequence's state stops changing once its mask turns off."""
        steps = x.shape[0]
        directions = 2 if self.bidirectional else 1
        states, finals = None, []
        for layer in range(self.num_layers):
            if layer and self.dropout and self.training:
                x = F.dropout(x, self.dropout, True)
            outputs = []
            for d, suffix in enumerate(("", "_reverse")[:directions]):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, suffix)
                x_proj = _project(x, w_ih, b_ih)  # every step's input projection at once
                if states is None:
                    states = self._initial(hx, x_proj, batched, directions)
                state = states[layer * directions + d]
                hs = [None] * steps
                order = range(steps - 1, -1, -1) if d else range(steps)
                for t in order:
                    new = rnn_step(self.mode, x_proj[t], state, w_hh, b_hh)
                    if masks is not None:  # finished sequences keep their state, output 0
                        new = tuple(ops.where(masks[t], n, o) for n, o in zip(new, state)) \
                            if self.mode == "LSTM" else ops.where(masks[t], new, state)
                    state = new
                    h = state[0] if self.mode == "LSTM" else state
                    hs[t] = h if masks is None else ops.where(masks[t], h, ops.zeros_like(h))
                outputs.append(ops.stack(hs, 0))
                finals.append(state)
            x = outputs[0] if directions == 1 else ops.concat(outputs, -1)
        if self.mode == "LSTM":
            h_n = (ops.stack([s[0] for s in finals], 0), ops.stack([s[1] for s in finals], 0))
        else:
            h_n = ops.stack(finals, 0)
        return x, h_n

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False,
                 device: DeviceLike | None = None, dtype: DTypeLike | None = None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"nn.RNN: nonlinearity must be 'tanh' or 'relu', got "
                             f"{nonlinearity!r}")
        super().__init__("RNN_" + nonlinearity.upper(), input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory; gates i, f, g, o stacked in that order in each weight."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype)


class GRU(RNNBase):
    """Gated recurrent unit; gates r, z, n stacked in that order in each weight."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: DeviceLike | None = None, dtype: DTypeLike | None = None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)


class RNNCellBase(Module):
    """One step of a recurrence: parameters weight_ih, weight_hh, bias_ih, bias_hh."""

    mode = ""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: DeviceLike | None = None, dtype: DTypeLike | None = None):
        super().__init__()
        check_device(device, f"nn.{type(self).__name__}")
        self.input_size, self.hidden_size, self.bias = int(input_size), int(hidden_size), bias
        dtype = np.dtype(dtype or np.float32)
        gate_size = int(num_chunks) * self.hidden_size  # the gates' rows, stacked
        self.weight_ih = Parameter(np.empty((gate_size, self.input_size), dtype))
        self.weight_hh = Parameter(np.empty((gate_size, self.hidden_size), dtype))
        if bias:
            self.bias_ih = Parameter(np.empty((gate_size,), dtype))
            self.bias_hh = Parameter(np.empty((gate_size,), dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def forward(self, input: Tensor, hx=None):
        """The next hidden state (h' for RNN/GRU cells, (h', c') for LSTMCell) from a (batch,
        input_size) or (input_size,) input."""
        x = as_tensor(input)
        name = type(self).__name__
        if x.ndim not in (1, 2) or (x.shape[-1] is not None and x.shape[-1] != self.input_size):
            raise ShapeError(f"nn.{name}: expects (batch, {self.input_size}) or "
                             f"({self.input_size},) input, got shape {x.shape}")
        batched = x.ndim == 2
        if not batched:
            x = ops.unsqueeze(x, 0)
        x_proj = _project(x, self.weight_ih, self.bias_ih)
        if hx is None:
            zero = ops.zeros_like(_gate(x_proj, 0, self.hidden_size))
            hx = (zero, zero) if self.mode == "LSTM" else zero
        elif not batched:
            hx = tuple(ops.unsqueeze(as_tensor(h), 0) for h in hx) if self.mode == "LSTM" \
                else ops.unsqueeze(as_tensor(hx), 0)
        out = rnn_step(self.mode, x_proj, hx, self.weight_hh, self.bias_hh)
        if not batched:
            out = tuple(ops.squeeze(h, 0) for h in out) if self.mode == "LSTM" else \
                ops.squeeze(out, 0)
        return out

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"nn.RNNCell: nonlinearity must be 'tanh' or 'relu', got "
                             f"{nonlinearity!r}")
        super().__init__(input_size, hidden_size, bias, _GATES["RNN_TANH"], device, dtype)
        self.mode = "RNN_" + nonlinearity.upper()
        self.nonlinearity = nonlinearity


class LSTMCell(RNNCellBase):
    """One LSTM step; returns (h', c')."""

    mode = "LSTM"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        super().__init__(input_size, hidden_size, bias, _GATES[self.mode], device, dtype)


class GRUCell(RNNCellBase):
    """One GRU step."""

    mode = "GRU"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        super().__init__(input_size, hidden_size, bias, _GATES[self.mode], device, dtype)
