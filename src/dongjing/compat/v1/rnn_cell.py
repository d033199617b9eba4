"""tf.nn.rnn_cell (also tf.contrib.rnn): BasicRNNCell, BasicLSTMCell, LSTMCell, GRUCell,
MultiRNNCell, DropoutWrapper, with TF's weight layout (one kernel over [inputs, state], LSTM
gates in the order i, j, f, o) and variable names (`<scope>/<cell name>/kernel`, `.../bias`).
A cell creates its variables on its first call and reuses them on every later call."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ... import ops as _ops
from ...errors import GraphError, ShapeError
from ...graph.builder import constant
from ...tensor import Tensor
from . import layer_vars
from .dtypes import as_dtype
from .dynamic_shape import arange, constant_value
from .graphs import building
from .math_ops import _t
from .nn_ops import dropout
from .unsupported import not_provided


class LSTMStateTuple(NamedTuple):
    """An LSTM's state: the cell state c and the output h."""

    c: object
    h: object

    @property
    def dtype(self):
        return self.c.dtype


class RNNCell:
    """The interface of TF1's cells: `output, new_state = cell(inputs, state)`,
    `state_size`, `output_size`, `zero_state(batch_size, dtype)`."""

    _default_name = "rnn_cell"

    def __init__(self, num_units: int = 0, activation=None, reuse=None, name=None,
                 dtype=None):
        self._num_units = int(num_units)
        self._activation = activation if activation is not None else _ops.tanh
        self._name = name
        self._scope_name = None
        self._variables: dict = {}
        self._dtype = dtype

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    @property
    def variables(self) -> list:
        """The variables this cell created (after its first call)."""
        return list(self._variables.values())

    trainable_variables = trainable_weights = weights = variables

    def zero_state(self, batch_size, dtype):
        """Zeros of the state's structure for a batch (`batch_size` may be a tensor)."""
        return _zeros_structure(self.state_size, batch_size, dtype)

    def _variable(self, name: str, shape, dtype, initializer=None):
        if name not in self._variables:
            self._variables[name] = layer_vars.create(name, shape, dtype, initializer)
        return self._variables[name]

    def __call__(self, inputs, state, scope=None):
        # the first call picks the cell's scope name (made unique, as TF's layers do); later
        # calls use the same name and the variables the first one made
        with layer_vars.scope(self._scope_name or self._name, self._default_name) as chosen:
            self._scope_name = chosen
            return self.call(_t(inputs), state)

    def call(self, inputs, state):  # pragma: no cover - each cell defines it
        raise NotImplementedError


def _zeros_structure(size, batch_size, dtype):
    if isinstance(size, LSTMStateTuple):
        return LSTMStateTuple(*(_zeros_structure(s, batch_size, dtype) for s in size))
    if isinstance(size, tuple):
        return tuple(_zeros_structure(s, batch_size, dtype) for s in size)
    dtype = as_dtype(dtype)

    if isinstance(batch_size, Tensor):
        known = constant_value(batch_size)
        if known is None:
            return _zeros_of_batch(batch_size, int(size), dtype)
        batch_size = int(known)

    with building():
        return constant(np.zeros((int(batch_size), int(size)), dtype))


def _zeros_of_batch(batch_size, size: int, dtype):
    """(batch_size, size) zeros for a batch size known only at run time."""
    with building((batch_size,)):
        n = _ops.cast(_ops.reshape(batch_size, ()), np.int64)
        rows = _ops.cast(arange(n * 0, n, n * 0 + 1, np.int64), dtype) * 0
        return _ops.unsqueeze(rows, 1) + np.zeros((1, size), dtype)


def _input_depth(what: str, inputs) -> int:
    depth = inputs.shape[-1]
    if inputs.ndim != 2 or depth is None:
        raise ShapeError(f"{what}: inputs must be (batch, depth) with a known depth, got shape "
                         f"{inputs.shape}")
    return depth


def _linear(inputs, state, kernel, bias):
    return _ops.matmul(_ops.concat([inputs, state], 1), kernel) + bias


class BasicRNNCell(RNNCell):
    """h' = activation([x, h] @ kernel + bias)."""

    _default_name = "basic_rnn_cell"

    def call(self, inputs, state):
        depth = _input_depth("BasicRNNCell", inputs)
        kernel = self._variable("kernel", (depth + self._num_units, self._num_units),
                                inputs.dtype)
        bias = self._variable("bias", (self._num_units,), inputs.dtype, 0.0)
        out = self._activation(_linear(inputs, state, kernel, bias))
        return out, out


class GRUCell(RNNCell):
    """TF's GRU: gates r, u from [x, h]; candidate from [x, r * h]; h' = u h + (1 - u) c."""

    _default_name = "gru_cell"

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None):
        super().__init__(num_units, activation, reuse, name, dtype)
        self._kernel_init, self._bias_init = kernel_initializer, bias_initializer

    def call(self, inputs, state):
        n = self._num_units
        depth = _input_depth("GRUCell", inputs)
        dtype = inputs.dtype
        gk = self._scoped("gates", "kernel", (depth + n, 2 * n), dtype, self._kernel_init)
        gb = self._scoped("gates", "bias", (2 * n,), dtype,
                          1.0 if self._bias_init is None else self._bias_init)
        ck = self._scoped("candidate", "kernel", (depth + n, n), dtype, self._kernel_init)
        cb = self._scoped("candidate", "bias", (n,), dtype,
                          0.0 if self._bias_init is None else self._bias_init)
        value = _ops.sigmoid(_linear(inputs, state, gk, gb))
        r, u = value[:, :n], value[:, n:]
        c = self._activation(_linear(inputs, r * state, ck, cb))
        new_h = u * state + (1.0 - u) * c
        return new_h, new_h

    def _scoped(self, sub: str, name: str, shape, dtype, initializer):
        key = f"{sub}/{name}"
        if key not in self._variables:
            with layer_vars.scope(sub):
                self._variables[key] = layer_vars.create(name, shape, dtype, initializer)
        return self._variables[key]


class BasicLSTMCell(RNNCell):
    """LSTM without peepholes: [i, j, f, o] = [x, h] @ kernel + bias; c' = c sigmoid(f +
    forget_bias) + sigmoid(i) tanh(j); h' = tanh(c') sigmoid(o). State (c, h)."""

    _default_name = "basic_lstm_cell"

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None):
        super().__init__(num_units, activation, reuse, name, dtype)
        if not state_is_tuple:
            raise GraphError("BasicLSTMCell(state_is_tuple=False) is deprecated in TF and not "
                             "provided: the state is an LSTMStateTuple(c, h)")
        self._forget_bias = float(forget_bias)

    @property
    def state_size(self):
        return LSTMStateTuple(self._num_units, self._num_units)

    def call(self, inputs, state):
        n = self._num_units
        c, h = state
        depth = _input_depth(type(self).__name__, inputs)
        kernel = self._variable("kernel", (depth + n, 4 * n), inputs.dtype)
        bias = self._variable("bias", (4 * n,), inputs.dtype, 0.0)
        gates = _linear(inputs, h, kernel, bias)
        i, j, f, o = (gates[:, k * n:(k + 1) * n] for k in range(4))
        new_c = c * _ops.sigmoid(f + self._forget_bias) + _ops.sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * _ops.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)


class LSTMCell(BasicLSTMCell):
    """LSTM with TF's options: initializer, cell_clip, use_peepholes (w_f_diag, w_i_diag,
    w_o_diag) and num_proj (a `projection/kernel` from the cell output)."""

    _default_name = "lstm_cell"

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None):
        super().__init__(num_units, forget_bias, state_is_tuple, activation, reuse, name, dtype)
        self._peepholes, self._cell_clip = use_peepholes, cell_clip
        self._init, self._num_proj, self._proj_clip = initializer, num_proj, proj_clip

    @property
    def state_size(self):
        return LSTMStateTuple(self._num_units, self._num_proj or self._num_units)

    @property
    def output_size(self):
        return self._num_proj or self._num_units

    def call(self, inputs, state):
        n = self._num_units
        c, h = state
        depth = _input_depth("LSTMCell", inputs)
        dtype = inputs.dtype
        kernel = self._variable("kernel", (depth + self.output_size, 4 * n), dtype, self._init)
        bias = self._variable("bias", (4 * n,), dtype, 0.0)
        gates = _linear(inputs, h, kernel, bias)
        i, j, f, o = (gates[:, k * n:(k + 1) * n] for k in range(4))
        if self._peepholes:
            w_f = self._variable("w_f_diag", (n,), dtype, self._init)
            w_i = self._variable("w_i_diag", (n,), dtype, self._init)
            w_o = self._variable("w_o_diag", (n,), dtype, self._init)
            new_c = (c * _ops.sigmoid(f + self._forget_bias + w_f * c)
                     + _ops.sigmoid(i + w_i * c) * self._activation(j))
        else:
            new_c = c * _ops.sigmoid(f + self._forget_bias) + _ops.sigmoid(i) * \
                self._activation(j)
        if self._cell_clip is not None:
            new_c = _ops.clip(new_c, -float(self._cell_clip), float(self._cell_clip))
        out_gate = o + w_o * new_c if self._peepholes else o
        new_h = _ops.sigmoid(out_gate) * self._activation(new_c)
        if self._num_proj is not None:
            if "projection/kernel" not in self._variables:
                with layer_vars.scope("projection"):
                    self._variables["projection/kernel"] = layer_vars.create(
                        "kernel", (n, self._num_proj), dtype, self._init)
            new_h = _ops.matmul(new_h, self._variables["projection/kernel"])
            if self._proj_clip is not None:
                new_h = _ops.clip(new_h, -float(self._proj_clip), float(self._proj_clip))
        return new_h, LSTMStateTuple(new_c, new_h)


class MultiRNNCell(RNNCell):
    """Cells stacked: each one's output is the next one's input; the state is a tuple."""

    _default_name = "multi_rnn_cell"

    def __init__(self, cells, state_is_tuple=True):
        super().__init__(0)
        if not cells:
            raise GraphError("MultiRNNCell needs at least one cell")
        if not state_is_tuple:
            raise GraphError("MultiRNNCell(state_is_tuple=False) is not provided")
        self._cells = list(cells)

    @property
    def state_size(self):
        return tuple(c.state_size for c in self._cells)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    @property
    def variables(self) -> list:
        return [v for c in self._cells for v in c.variables]

    trainable_variables = trainable_weights = weights = variables

    def zero_state(self, batch_size, dtype):
        return tuple(c.zero_state(batch_size, dtype) for c in self._cells)

    def call(self, inputs, state):
        new_states = []
        out = inputs
        for i, (cell, s) in enumerate(zip(self._cells, state)):
            with layer_vars.scope(f"cell_{i}"):
                out, s = cell(out, s)
            new_states.append(s)
        return out, tuple(new_states)


class DropoutWrapper(RNNCell):
    """A cell with dropout on its inputs, outputs and (non-recurrently) its state."""

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None,
                 dropout_state_filter_visitor=None):
        super().__init__(0)
        if variational_recurrent:
            not_provided("DropoutWrapper(variational_recurrent=True)")
        self._cell = cell
        self._keep = (input_keep_prob, output_keep_prob, state_keep_prob)

    @property
    def state_size(self):
        return self._cell.state_size

    @property
    def output_size(self):
        return self._cell.output_size

    @property
    def variables(self) -> list:
        return self._cell.variables

    trainable_variables = trainable_weights = weights = variables

    def zero_state(self, batch_size, dtype):
        return self._cell.zero_state(batch_size, dtype)

    def __call__(self, inputs, state, scope=None):
        keep_in, keep_out, keep_state = self._keep
        inputs = _t(inputs)
        if not _is_one(keep_in):
            inputs = dropout(inputs, keep_prob=keep_in)
        out, new_state = self._cell(inputs, state)
        if not _is_one(keep_out):
            out = dropout(out, keep_prob=keep_out)
        if not _is_one(keep_state):
            new_state = _map_state(lambda s: dropout(s, keep_prob=keep_state), new_state)
        return out, new_state


def _is_one(value) -> bool:
    return not isinstance(value, Tensor) and float(value) == 1.0


def _map_state(fn, state):
    if isinstance(state, LSTMStateTuple):
        return LSTMStateTuple(*(fn(s) for s in state))
    if isinstance(state, tuple):
        return tuple(_map_state(fn, s) for s in state)
    return fn(state)


RNNCell.__module__ = __name__


if TYPE_CHECKING:
    from typing import TypeAlias

    RNNState: TypeAlias = Tensor | LSTMStateTuple | tuple["RNNState", ...]
    """A cell's state: a tensor, an LSTM's (c, h), or a tuple of them (MultiRNNCell)."""
