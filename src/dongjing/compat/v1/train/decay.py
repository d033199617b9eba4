"""tf.train's learning-rate schedules: graph tensors of the global step, as TF 1.x computes
them (float32)."""

from __future__ import annotations

import math

from .... import ops as _ops
from ....tensor import Tensor
from ..graphs import tf_function
from ..variables import Variable


def _float(x):
    if isinstance(x, Tensor):
        return x if x.dtype == "float32" else _ops.cast(x, "float32")
    return float(x)


def _step(global_step):
    if global_step is None:
        raise ValueError("a learning-rate decay needs global_step")

    if isinstance(global_step, Variable):
        global_step = global_step.value()
    return _float(global_step)


@tf_function
def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """lr * decay_rate ^ (step / decay_steps) (the power floored when `staircase`)."""
    p = _step(global_step) / _float(decay_steps)
    if staircase:
        p = _ops.floor(p)
    return _float(learning_rate) * _ops.pow(_float(decay_rate) + _ops.zeros_like(p), p)


@tf_function
def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """lr * exp(-decay_rate * step / decay_steps) (the ratio floored when `staircase`)."""
    p = _step(global_step) / _float(decay_steps)
    if staircase:
        p = _ops.floor(p)
    return _float(learning_rate) * _ops.exp(-_float(decay_rate) * p)


@tf_function
def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                       name=None):
    """lr / (1 + decay_rate * step / decay_steps) (the ratio floored when `staircase`)."""
    p = _step(global_step) / _float(decay_steps)
    if staircase:
        p = _ops.floor(p)
    return _float(learning_rate) / (1.0 + _float(decay_rate) * p)


@tf_function
def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    """(lr - end) * (1 - step / decay_steps) ^ power + end, with the step held at decay_steps
    (or, with `cycle`, decay_steps grown to the next multiple above the step)."""
    step = _step(global_step)
    decay_steps = _float(decay_steps)
    if cycle:
        multiple = _ops.ceil(step / decay_steps)
        multiple = _ops.where(step == 0.0, _ops.ones_like(multiple), multiple)
        decay_steps = decay_steps * multiple
    else:
        step = _ops.minimum(step, decay_steps + _ops.zeros_like(step))
    lr, end = _float(learning_rate), _float(end_learning_rate)
    frac = 1.0 - step / decay_steps
    return (lr - end) * _ops.pow(frac, _float(power) + _ops.zeros_like(frac)) + end


@tf_function
def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """lr * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) +
    alpha)."""
    step = _step(global_step)
    step = _ops.minimum(step, _float(decay_steps) + _ops.zeros_like(step))
    cosine = 0.5 * (1.0 + _ops.cos(math.pi * step / _float(decay_steps)))
    return _float(learning_rate) * ((1.0 - alpha) * cosine + alpha)


@tf_function
def piecewise_constant(x, boundaries, values, name=None):
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <=
    boundaries[i], values[-1] after the last boundary."""
    if len(values) != len(boundaries) + 1:
        raise ValueError("piecewise_constant: values needs one more entry than boundaries")
    x = _step(x)
    out = _float(values[-1]) + _ops.zeros_like(x)
    for bound, value in reversed(list(zip(boundaries, values[:-1]))):
        out = _ops.where(x <= _float(bound), _float(value) + _ops.zeros_like(x), out)
    return out


piecewise_constant_decay = piecewise_constant
