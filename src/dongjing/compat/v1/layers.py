"""tf.layers: dense, conv2d, max_pooling2d, average_pooling2d, dropout, flatten,
batch_normalization, on compat.v1's tf.nn functions; variables named as TF names them
(`dense/kernel`, `conv2d_1/bias`, `batch_normalization/moving_mean`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import ops as _ops
from ...errors import GraphError, ShapeError
from ...tensor import Tensor
from . import layer_vars
from .control import cond
from .dynamic_shape import reshape_to, shape_of
from .graph_state import state_of
from .graphs import get_default_graph, tf_function
from .math_ops import _t
from .nn import bias_add
from .nn_conv import avg_pool, max_pool
from .nn_conv import conv2d as nn_conv2d
from .nn_ops import dropout as nn_dropout
from .nn_ops import moments
from .unsupported import module_getattr, not_provided
from .variables import assign

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ...types import Number, TensorLike

__getattr__ = module_getattr("tf.layers")

UPDATE_OPS = "update_ops"


def _activate(x, activation):
    return x if activation is None else activation(x)


def _pair(value, what: str) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)):
        return int(value), int(value)
    value = tuple(int(v) for v in value)
    if len(value) != 2:
        raise ShapeError(f"{what} must be an int or a pair, got {value}")
    return value


def _no_extras(what: str, **given) -> None:
    for name, value in given.items():
        if value is not None:
            not_provided(f"{what}({name}=...)")


@tf_function
def dense(inputs: TensorLike, units: int,
          activation: Callable[[Tensor], Tensor] | None = None, use_bias: bool = True,
          kernel_initializer: Callable[..., TensorLike] | Number | None = None,
          bias_initializer: Callable[..., TensorLike] | Number | None = None,
          kernel_regularizer: None = None,
          bias_regularizer: None = None, activity_regularizer: None = None,
          kernel_constraint: None = None, bias_constraint: None = None,
          trainable: bool = True, name: str | None = None,
          reuse: bool | str | None = None) -> Tensor:
    """activation(inputs @ kernel + bias) over the last dim (kernel: (in, units))."""
    _no_extras("tf.layers.dense", kernel_regularizer=kernel_regularizer,
               bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
               kernel_constraint=kernel_constraint, bias_constraint=bias_constraint)
    x = _t(inputs)
    depth = x.shape[-1]
    if depth is None:
        raise ShapeError(f"tf.layers.dense: the last dim of the input {x.shape} must be known")
    with layer_vars.scope(name, "dense"):
        kernel = layer_vars.create("kernel", (depth, int(units)), x.dtype, kernel_initializer,
                                   trainable)
        out = _ops.matmul(x, kernel)
        if use_bias:
            out = out + layer_vars.create("bias", (int(units),), x.dtype,
                                          bias_initializer if bias_initializer is not None
                                          else 0.0, trainable)
    return _activate(out, activation)


@tf_function
def conv2d(inputs: TensorLike, filters: int, kernel_size: int | Sequence[int],
           strides: int | Sequence[int] = (1, 1), padding: str = "valid",
           data_format: str = "channels_last", dilation_rate: int | Sequence[int] = (1, 1),
           activation: Callable[[Tensor], Tensor] | None = None, use_bias: bool = True,
           kernel_initializer: Callable[..., TensorLike] | Number | None = None,
           bias_initializer: Callable[..., TensorLike] | Number | None = None,
           kernel_regularizer: None = None,
           bias_regularizer: None = None, activity_regularizer: None = None,
           kernel_constraint: None = None, bias_constraint: None = None,
           trainable: bool = True, name: str | None = None,
           reuse: bool | str | None = None) -> Tensor:
    """A 2-d convolution layer (kernel (kh, kw, in, filters)), then bias and activation."""
    _no_extras("tf.layers.conv2d", kernel_regularizer=kernel_regularizer,
               bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
               kernel_constraint=kernel_constraint, bias_constraint=bias_constraint)
    x = _t(inputs)
    fmt = _format(data_format, "tf.layers.conv2d")
    channels = x.shape[-1] if fmt == "NHWC" else x.shape[1]
    if channels is None:
        raise ShapeError(f"tf.layers.conv2d: the channels of the input {x.shape} must be known")
    kh, kw = _pair(kernel_size, "tf.layers.conv2d: kernel_size")
    sh, sw = _pair(strides, "tf.layers.conv2d: strides")
    dh, dw = _pair(dilation_rate, "tf.layers.conv2d: dilation_rate")
    with layer_vars.scope(name, "conv2d"):
        kernel = layer_vars.create("kernel", (kh, kw, channels, int(filters)), x.dtype,
                                   kernel_initializer, trainable)
        out = nn_conv2d(x, kernel, (sh, sw), padding, data_format=fmt, dilations=(dh, dw))
        if use_bias:
            bias = layer_vars.create("bias", (int(filters),), x.dtype,
                                     bias_initializer if bias_initializer is not None else 0.0,
                                     trainable)
            out = bias_add(out, bias, data_format=fmt)
    return _activate(out, activation)


def _format(data_format, what: str) -> str:
    if data_format in ("channels_last", "NHWC", None):
        return "NHWC"
    if data_format in ("channels_first", "NCHW"):
        return "NCHW"
    raise GraphError(f"{what}: data_format must be 'channels_last' or 'channels_first', got "
                     f"{data_format!r}")


def _pool(fn, what, inputs, pool_size, strides, padding, data_format):
    fmt = _format(data_format, what)
    kernel, stride = _pair(pool_size, f"{what}: pool_size"), _pair(strides, f"{what}: strides")
    return fn(_t(inputs), kernel, stride, padding, data_format=fmt)


@tf_function
def max_pooling2d(inputs: TensorLike, pool_size: int | Sequence[int],
                  strides: int | Sequence[int], padding: str = "valid",
                  data_format: str = "channels_last", name: str | None = None) -> Tensor:
    """Max pooling over (pool_size) windows."""
    return _pool(max_pool, "tf.layers.max_pooling2d", inputs, pool_size, strides, padding,
                 data_format)


@tf_function
def average_pooling2d(inputs: TensorLike, pool_size: int | Sequence[int],
                      strides: int | Sequence[int], padding: str = "valid",
                      data_format: str = "channels_last", name: str | None = None) -> Tensor:
    """Average pooling over (pool_size) windows (SAME: over the real pixels only)."""
    return _pool(avg_pool, "tf.layers.average_pooling2d", inputs, pool_size, strides, padding,
                 data_format)


@tf_function
def dropout(inputs: TensorLike, rate: float = 0.5, noise_shape: Sequence[int] | None = None,
            seed: int | None = None, training: bool | Tensor = False, name: str | None = None
            ) -> Tensor:
    """Dropout of `rate` when `training` (a bool or a bool tensor), else the input as is."""
    x = _t(inputs)
    if isinstance(training, Tensor):
        return cond(training, lambda: nn_dropout(x, rate=rate, noise_shape=noise_shape),
                    lambda: _ops.clone(x))
    if not training:
        return x
    return nn_dropout(x, rate=rate, noise_shape=noise_shape)


@tf_function
def flatten(inputs: TensorLike, name: str | None = None, data_format: str = "channels_last"
            ) -> Tensor:
    """(batch, everything else): the input with all dims but the first joined."""
    x = _t(inputs)
    rest = x.shape[1:]
    if None not in rest:
        return _ops.reshape(x, (-1, int(np.prod(rest, dtype=np.int64))))

    dims = shape_of(x)
    count = _ops.cast(_ops.prod(_ops.cast(dims[1:], np.int64), 0), np.int32)
    return reshape_to(x, _ops.stack([_ops.cast(dims[0] * 0 - 1, np.int32), count], 0))


@tf_function
def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None,
                        moving_mean_initializer=None, moving_variance_initializer=None,
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                        fused=None, virtual_batch_size=None, adjustment=None):
    """Batch normalization over every dim but `axis`: batch statistics when `training` (and
    the moving averages' updates added to tf.GraphKeys.UPDATE_OPS, to run with the train op),
    the moving averages otherwise."""
    _no_extras("tf.layers.batch_normalization", beta_regularizer=beta_regularizer,
               gamma_regularizer=gamma_regularizer, beta_constraint=beta_constraint,
               gamma_constraint=gamma_constraint, renorm_clipping=renorm_clipping,
               virtual_batch_size=virtual_batch_size, adjustment=adjustment)
    if renorm:
        not_provided("tf.layers.batch_normalization(renorm=True)")
    x = _t(inputs)
    axis = int(axis) % x.ndim
    depth = x.shape[axis]
    if depth is None:
        raise ShapeError(f"tf.layers.batch_normalization: dim {axis} of {x.shape} must be known")
    reduce = [d for d in range(x.ndim) if d != axis]
    shape = [1] * x.ndim
    shape[axis] = depth
    dtype = x.dtype
    with layer_vars.scope(name, "batch_normalization"):
        gamma = layer_vars.create("gamma", (depth,), dtype, gamma_initializer
                                  if gamma_initializer is not None else 1.0, trainable) \
            if scale else None
        beta = layer_vars.create("beta", (depth,), dtype, beta_initializer
                                 if beta_initializer is not None else 0.0, trainable) \
            if center else None
        moving_mean = layer_vars.create("moving_mean", (depth,), dtype,
                                        moving_mean_initializer if moving_mean_initializer
                                        is not None else 0.0, trainable=False)
        moving_var = layer_vars.create("moving_variance", (depth,), dtype,
                                       moving_variance_initializer
                                       if moving_variance_initializer is not None else 1.0,
                                       trainable=False)

    def normalize(mean, variance):
        out = (x - _ops.reshape(mean, shape)) * _ops.rsqrt(_ops.reshape(variance, shape)
                                                          + epsilon)
        if gamma is not None:
            out = out * _ops.reshape(gamma, shape)
        if beta is not None:
            out = out + _ops.reshape(beta, shape)
        return out

    def batch():
        mean, variance = moments(x, reduce)
        return normalize(mean, variance)

    def moving():
        return normalize(moving_mean, moving_var)

    if isinstance(training, Tensor) or training:
        mean, variance = moments(x, reduce)
        # TF's fused kernel (its default for 4-d inputs normalized over the channels) moves the
        # average toward the unbiased variance; the general path toward the batch's own
        sizes = [x.shape[d] for d in reduce]
        fused_path = fused is not False and x.ndim == 4 and axis in (1, 3)
        n = int(np.prod(sizes)) if None not in sizes else None
        if fused_path and n is None:
            n = _ops.cast(_ops.prod(_ops.cast(_dynamic_sizes(x, reduce), np.int64), 0), dtype)
            unbiased = variance * (n / (n - 1.0))
        elif fused_path and n > 1:
            unbiased = variance * (n / (n - 1.0))
        else:
            unbiased = variance
        decay = 1.0 - float(momentum)
        new_mean = moving_mean - (moving_mean - mean) * decay
        new_var = moving_var - (moving_var - unbiased) * decay
        if isinstance(training, Tensor):  # the averages move only in training runs
            new_mean = cond(training, lambda: new_mean, lambda: _ops.clone(moving_mean))
            new_var = cond(training, lambda: new_var, lambda: _ops.clone(moving_var))
        updates = [assign(moving_mean, new_mean), assign(moving_var, new_var)]
        _add_update_ops(updates)
        if isinstance(training, Tensor):
            return cond(training, batch, moving)
        return normalize(mean, variance)
    return moving()


def _dynamic_sizes(x, dims):
    shape = shape_of(x)
    return _ops.stack([shape[d] for d in dims], 0)


def _collections(graph=None) -> dict:
    """The graph's TF1 collections (the dict tf.get_collection reads)."""
    return state_of(graph or get_default_graph()).__dict__.setdefault("collections", {})


def _add_update_ops(updates) -> None:
    """Put the moving averages' updates in the UPDATE_OPS collection (tf.GraphKeys)."""
    _collections().setdefault(UPDATE_OPS, []).extend(updates)


def get_update_ops(graph=None) -> list:
    """The update ops tf.layers.batch_normalization added (the UPDATE_OPS collection)."""
    return list(_collections(graph).get(UPDATE_OPS, []))
