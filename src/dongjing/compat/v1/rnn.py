"""Running cells over sequences: tf.nn.static_rnn (a Python loop, one set of ops per step),
tf.nn.dynamic_rnn (one graph while_loop over time), their bidirectional forms; sequence_length
stops each sequence at its length (zero outputs after it, the state carried through)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import ops as _ops
from ...errors import GraphError, ShapeError
from ...graph.builder import constant
from ...ops.control import while_loop
from . import layer_vars
from .dynamic_shape import shape_of
from .graphs import building
from .math_ops import _t
from .rnn_cell import LSTMStateTuple
from .unsupported import not_provided

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...tensor import Tensor
    from ...types import DTypeLike, TensorLike
    from .rnn_cell import RNNCell, RNNState


def flatten(state) -> list:
    """The tensors of a (nested) state, in order."""
    if isinstance(state, (tuple, list)):
        return [t for s in state for t in flatten(s)]
    return [state]


def pack(structure, flat: list):
    """`flat`'s tensors in `structure`'s nesting (the inverse of flatten)."""
    items = iter(flat)

    def build(s):
        if isinstance(s, LSTMStateTuple):
            return LSTMStateTuple(*(build(x) for x in s))
        if isinstance(s, (tuple, list)):
            return type(s)(build(x) for x in s)
        return next(items)

    return build(structure)


def _batch_size(x):
    if x.shape[0] is not None:
        return x.shape[0]

    return shape_of(x)[0]


def _initial(cell, first_input, initial_state, dtype, what: str):
    if initial_state is not None:
        return initial_state
    if dtype is None:
        raise GraphError(f"{what}: give initial_state or dtype")
    return cell.zero_state(_batch_size(first_input), dtype)


def _keep_until(length, t, new, old):
    """new where t < length (per batch row), else old."""
    alive = _ops.unsqueeze(_ops.lt(t, length), 1)
    return _ops.where(alive, new, old)


def static_rnn(cell: RNNCell, inputs: Sequence[TensorLike], initial_state: RNNState | None = None,
               dtype: DTypeLike | None = None, sequence_length: TensorLike | None = None,
               scope: str | None = None) -> tuple[list[Tensor], RNNState]:
    """(outputs, state): the cell applied to each of the list `inputs` in turn."""
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise GraphError("static_rnn: inputs must be a non-empty list of (batch, depth) tensors")
    inputs = [_t(x) for x in inputs]
    with building((inputs,)), layer_vars.scope(scope or "rnn"):
        state = _initial(cell, inputs[0], initial_state, dtype, "static_rnn")
        length = None if sequence_length is None else _ops.cast(_t(sequence_length), np.int64)
        outputs = []
        for t, x in enumerate(inputs):
            out, new_state = cell(x, state)
            if length is not None:
                step = constant(np.asarray(t, np.int64))
                out = _keep_until(length, step, out, _ops.zeros_like(out))
                new_state = pack(new_state, [_keep_until(length, step, n, o) for n, o in
                                             zip(flatten(new_state), flatten(state))])
            outputs.append(out)
            state = new_state
    return outputs, state


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None,
                             scope=None):
    """(outputs, state_fw, state_bw): a forward and a backward static_rnn, outputs joined
    along the depth dim."""
    with building((inputs,)), layer_vars.scope(scope or "bidirectional_rnn"):
        out_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                      sequence_length, scope="fw")
        reversed_inputs = _reverse_list(inputs, sequence_length)
        out_bw, state_bw = static_rnn(cell_bw, reversed_inputs, initial_state_bw, dtype,
                                      sequence_length, scope="bw")
        out_bw = _reverse_list(out_bw, sequence_length)
    return [_ops.concat([f, b], 1) for f, b in zip(out_fw, out_bw)], state_fw, state_bw


def _reverse_list(items, sequence_length):
    if sequence_length is None:
        return list(reversed(items))
    stacked = _ops.stack([_t(x) for x in items], 0)
    return list(_ops.unbind(_reverse_sequence(stacked, sequence_length), 0))


def _reverse_sequence(x, sequence_length):
    """Time-major (T, B, ...) x with each row's first length[b] steps reversed."""
    steps = x.shape[0]
    if steps is None:
        not_provided("a bidirectional rnn with sequence_length over an unknown number of steps")
    length = _ops.cast(_t(sequence_length), np.int64)
    t = constant(np.arange(steps, dtype=np.int64))
    source = _ops.unsqueeze(length, 0) - 1 - _ops.unsqueeze(t, 1)  # (T, B)
    source = _ops.where(source >= 0, source, _ops.unsqueeze(t, 1) + _ops.zeros_like(source))
    index = _ops.reshape(source, (steps, -1) + (1,) * (x.ndim - 2))
    index = index + _ops.zeros_like(x, np.int64)  # broadcast over the feature dims
    return _ops.gather(x, 0, index)


def dynamic_rnn(cell: RNNCell, inputs: TensorLike, sequence_length: TensorLike | None = None,
                initial_state: RNNState | None = None, dtype: DTypeLike | None = None,
                parallel_iterations: int | None = None, swap_memory: bool = False,
                time_major: bool = False, scope: str | None = None) -> tuple[Tensor, RNNState]:
    """(outputs, state) over a (batch, time, depth) input (time-major: (time, batch, depth)),
    as one graph while_loop over the time steps."""
    x = _t(inputs)
    if x.ndim < 3:
        raise ShapeError(f"dynamic_rnn: inputs must be at least 3-d, got shape {x.shape}")
    with building((x,)), layer_vars.scope(scope or "rnn"):
        xt = x if time_major else _ops.permute(x, (1, 0) + tuple(range(2, x.ndim)))
        steps = xt.shape[0]
        if steps is None:
            not_provided("dynamic_rnn over a number of time steps known only at run time")
        if x.ndim != 3:
            not_provided("dynamic_rnn over inputs of more than one feature dim")
        state = _initial(cell, xt[0], initial_state, dtype, "dynamic_rnn")
        length = None if sequence_length is None else _ops.cast(_t(sequence_length), np.int64)
        # step 0 outside the loop: the cell creates its variables in the graph itself
        out, new_state = cell(xt[0], state)
        zero = constant(np.asarray(0, np.int64))
        if length is not None:
            out = _keep_until(length, zero, out, _ops.zeros_like(out))
            new_state = pack(new_state, [_keep_until(length, zero, n, o) for n, o in
                                         zip(flatten(new_state), flatten(state))])
        eye = constant(np.eye(steps, dtype=out.dtype))
        acc = _ops.unsqueeze(out, 0) * _ops.reshape(eye[0], (steps, 1, 1))
        structure = new_state
        time_index = constant(np.arange(steps, dtype=np.int64))

        def cond(t, *rest):
            return t < steps

        def body(t, *rest):
            flat_state, accumulated = list(rest[:-1]), rest[-1]
            old = pack(structure, flat_state)
            out, new = cell(xt[t], old)
            new_flat = flatten(new)
            if length is not None:
                out = _keep_until(length, t, out, _ops.zeros_like(out))
                new_flat = [_keep_until(length, t, n, o) for n, o in zip(new_flat, flat_state)]
            hot = _ops.cast(_ops.eq(time_index, t), out.dtype)
            accumulated = accumulated + _ops.unsqueeze(out, 0) * _ops.reshape(hot, (steps, 1, 1))
            return [t + 1] + new_flat + [accumulated]

        one = constant(np.asarray(1, np.int64))
        final = while_loop(cond, body, [one] + flatten(new_state) + [acc])
        outputs, state = final[-1], pack(structure, list(final[1:-1]))
        if not time_major:
            outputs = _ops.permute(outputs, (1, 0, 2))
    return outputs, state


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory=False, time_major=False,
                              scope=None):
    """((outputs_fw, outputs_bw), (state_fw, state_bw)): dynamic_rnn forward, and over each
    sequence reversed (within its length) backward, its outputs reversed back."""
    x = _t(inputs)
    with building((x,)), layer_vars.scope(scope or "bidirectional_rnn"):
        out_fw, state_fw = dynamic_rnn(cell_fw, x, sequence_length, initial_state_fw, dtype,
                                       time_major=time_major, scope="fw")
        xt = x if time_major else _ops.permute(x, (1, 0, 2))
        reverse = (lambda v: _reverse_sequence(v, sequence_length)) if sequence_length \
            is not None else (lambda v: _ops.flip(v, 0))
        out_bw, state_bw = dynamic_rnn(cell_bw, reverse(xt), sequence_length, initial_state_bw,
                                       dtype, time_major=True, scope="bw")
        out_bw = reverse(out_bw)
        if not time_major:
            out_bw = _ops.permute(out_bw, (1, 0, 2))
    return (out_fw, out_bw), (state_fw, state_bw)
