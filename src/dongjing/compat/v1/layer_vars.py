"""Variables that tf.layers and the RNN cells create, named as TF names them
(`rnn/basic_lstm_cell/kernel`, `dense_1/bias`), with TF's default initializers.

Where compat.v1's variable scopes are present (`scopes`: tf.variable_scope / tf.get_variable,
issue 32's item 1, written beside this module), a layer's scope is a `tf.variable_scope` and
its variables come from `tf.get_variable`, so `reuse=True` shares them as TF's layers do.
Until that module is on the same branch, a thin stand-in names them the same way: a per-graph
stack of scope names, a layer's name made unique per graph (`dense`, `dense_1`, ...), and
`tf.Variable`s. When both are on main, the stand-in (and the look-up below) can go.
"""

from __future__ import annotations

import importlib
import importlib.util
from contextlib import contextmanager

import numpy as np

from .graphs import get_default_graph
from .random_ops import random_uniform
from .variables import Variable


def _variable_scopes():
    """compat.v1's `scopes` module, or None while it is not part of this tree."""
    name = f"{__package__}.scopes"
    return importlib.import_module(name) if importlib.util.find_spec(name) else None


_SCOPES = _variable_scopes()


class _Names:
    def __init__(self):
        self.stack: list[str] = []
        self.used: dict[str, int] = {}


def _names(graph) -> _Names:
    names = graph.__dict__.get("_tf1_layer_names")
    if names is None:
        names = graph._tf1_layer_names = _Names()
    return names


def _prefix() -> str:
    stack = _names(get_default_graph()).stack
    return "".join(f"{s}/" for s in stack)


def _unique(base: str) -> str:
    names = _names(get_default_graph())
    full = _prefix() + base
    count = names.used.get(full, 0)
    names.used[full] = count + 1
    return base if count == 0 else f"{base}_{count}"


@contextmanager
def scope(name: str | None, default_name: str | None = None):
    """Variables created inside are named `name/...` (or `default_name`, made unique:
    `dense`, `dense_1`, ...); nested scopes join with '/'. Yields the scope's own name."""
    if _SCOPES is not None:
        with _SCOPES.variable_scope(name, default_name=default_name) as opened:
            yield opened.name.rsplit("/", 1)[-1]
        return
    names = _names(get_default_graph())
    chosen = name if name is not None else _unique(default_name)
    names.stack.append(chosen)
    try:
        yield chosen
    finally:
        names.stack.pop()


def glorot_uniform(shape, dtype):
    """TF's default initializer of get_variable: U(-l, l), l = sqrt(6 / (fan_in + fan_out))."""
    shape = tuple(int(d) for d in shape)
    if len(shape) < 2:
        fan_in = fan_out = shape[0] if shape else 1
    else:
        receptive = int(np.prod(shape[:-2]))
        fan_in, fan_out = shape[-2] * receptive, shape[-1] * receptive
    limit = float(np.sqrt(6.0 / (fan_in + fan_out)))
    return random_uniform(shape, -limit, limit, dtype=dtype)


def _as_initializer(value):
    """An initializer function for `value`: itself if callable, else one filling with it."""
    if value is None or callable(value):
        return value
    return lambda shape, dtype=None, partition_info=None: np.full(shape, value, dtype)


def create(name: str, shape, dtype="float32", initializer=None, trainable: bool = True):
    """The variable `<scope>/<name>`; `initializer` is a function (shape, dtype) -> value or a
    number to fill with (default: glorot_uniform). With variable scopes present, it is
    `tf.get_variable` (shared when the scope reuses)."""
    shape = tuple(int(d) for d in shape)
    initializer = _as_initializer(initializer)
    if _SCOPES is not None:
        return _SCOPES.get_variable(name, shape, dtype, initializer=initializer,
                                    trainable=trainable)

    if initializer is None:
        initial = glorot_uniform(shape, dtype)
    else:
        try:
            initial = initializer(shape, dtype=dtype)
        except TypeError:
            initial = initializer(shape)
    return Variable(initial, name=_prefix() + name, trainable=trainable, dtype=dtype)
