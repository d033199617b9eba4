"""tf.nn: activations and the softmax / sigmoid cross-entropy losses, on dongjing ops."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import ops as _ops
from ...errors import DTypeError, GraphError
from .graphs import tf_function
from .math_ops import _t
from .unsupported import module_getattr

__getattr__ = module_getattr("tf.nn")


def _axis(axis, dim, what: str) -> int:
    if axis is not None and dim is not None:
        raise GraphError(f"{what}: give axis or dim, not both")
    chosen = axis if axis is not None else dim
    return -1 if chosen is None else int(chosen)


@tf_function
def relu(features: TensorLike, name: str | None = None) -> Tensor:
    """max(features, 0), elementwise."""
    return _ops.relu(_t(features))


@tf_function
def sigmoid(x: TensorLike, name: str | None = None) -> Tensor:
    """1 / (1 + exp(-x)), elementwise."""
    return _ops.sigmoid(_t(x))


@tf_function
def tanh(x, name=None):
    """Hyperbolic tangent, elementwise."""
    return _ops.tanh(_t(x))


@tf_function
def softmax(logits, axis=None, name=None, dim=None):
    """exp(logits) normalised to sum 1 along `axis` (default: the last)."""
    return _ops.softmax(_t(logits), _axis(axis, dim, "tf.nn.softmax"))


@tf_function
def log_softmax(logits, axis=None, name=None, dim=None):
    """log(softmax(logits)), computed stably."""
    return _ops.log_softmax(_t(logits), _axis(axis, dim, "tf.nn.log_softmax"))


@tf_function
def bias_add(value, bias, data_format=None, name=None):
    """value + bias, bias along the channel dim (the last, or dim 1 with NCHW / NC...)."""
    value, bias = _t(value), _t(bias)
    if bias.ndim != 1:
        raise GraphError(f"tf.nn.bias_add: bias must be 1-d, got shape {bias.shape}")
    if data_format in (None, "NHWC", "N...C", "NWC", "NDHWC"):
        return value + bias
    if data_format in ("NCHW", "NC...", "NCW", "NCDHW"):
        return value + _ops.reshape(bias, (-1,) + (1,) * (value.ndim - 2))
    raise GraphError(f"tf.nn.bias_add: unknown data_format {data_format!r}")


@tf_function
def l2_loss(t, name=None):
    """sum(t ** 2) / 2."""
    t = _t(t)
    return _ops.sum(t * t) * 0.5


def _named_only(what: str, sentinel) -> None:
    if sentinel is not None:
        raise GraphError(f"{what}: call it with named arguments (labels=..., logits=...), as "
                         "TensorFlow requires")


def _check_float(what: str, labels, logits) -> None:
    if logits.dtype.kind != "f":
        raise DTypeError(f"{what}: logits must be floating point, got {logits.dtype}")


@tf_function
def softmax_cross_entropy_with_logits_v2(_sentinel=None, labels=None, logits=None, dim=-1,
                                         name=None, axis=None):
    """-sum(labels * log_softmax(logits)) along `axis` (default: the last): one loss per row.
    Gradients flow into both labels and logits."""
    what = "tf.nn.softmax_cross_entropy_with_logits_v2"
    _named_only(what, _sentinel)
    logits = _t(logits)
    labels = _ops.cast(_t(labels), logits.dtype)
    _check_float(what, labels, logits)
    axis = _axis(axis, None if dim == -1 else dim, what)
    return -_ops.sum(labels * _ops.log_softmax(logits, axis), axis)


@tf_function
def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1,
                                      name=None, axis=None):
    """The pre-v2 form: the same loss, with no gradient into `labels`."""
    return softmax_cross_entropy_with_logits_v2(labels=_ops.stop_gradient(_t(labels)),
                                                logits=logits, dim=dim, axis=axis)


@tf_function
def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None):
    """-log_softmax(logits)[label] per row, for integer class labels."""
    what = "tf.nn.sparse_softmax_cross_entropy_with_logits"
    _named_only(what, _sentinel)
    logits, labels = _t(logits), _t(labels)
    _check_float(what, labels, logits)
    if labels.dtype.kind not in "iu":
        raise DTypeError(f"{what}: labels must be integers, got {labels.dtype}")
    depth = logits.shape[-1]
    if depth is None:
        raise GraphError(f"{what}: the number of classes (last dim of logits) must be known")
    hot = _ops.one_hot(labels, depth, logits.dtype)
    return -_ops.sum(hot * _ops.log_softmax(logits, -1), -1)


@tf_function
def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """max(x, 0) - x * z + log(1 + exp(-|x|)) for logits x and labels z (stable)."""
    what = "tf.nn.sigmoid_cross_entropy_with_logits"
    _named_only(what, _sentinel)
    logits = _t(logits)
    labels = _ops.cast(_t(labels), logits.dtype)
    _check_float(what, labels, logits)
    return (_ops.relu(logits) - logits * labels
            + _ops.log(1.0 + _ops.exp(-_ops.abs(logits))))


from . import nn_ops as _nn_ops  # noqa: E402
from .namespaces import Namespace  # noqa: E402
from .nn_conv import (  # noqa: E402, F401
    avg_pool,
    avg_pool2d,
    conv2d,
    conv2d_transpose,
    depthwise_conv2d,
    max_pool,
    max_pool2d,
)
from .nn_ops import (  # noqa: E402, F401
    batch_normalization,
    dropout,
    elu,
    embedding_lookup,
    in_top_k,
    l2_normalize,
    leaky_relu,
    moments,
    nce_loss,
    relu6,
    sampled_softmax_loss,
    selu,
    softplus,
    softsign,
    top_k,
)
from .rnn import (  # noqa: E402, F401
    bidirectional_dynamic_rnn,
    dynamic_rnn,
    static_bidirectional_rnn,
    static_rnn,
)
from .rnn_cell import (  # noqa: E402
    BasicLSTMCell,
    BasicRNNCell,
    DropoutWrapper,
    GRUCell,
    LSTMCell,
    LSTMStateTuple,
    MultiRNNCell,
    RNNCell,
)

if TYPE_CHECKING:
    from ...tensor import Tensor
    from ...types import TensorLike

rnn_cell = Namespace("tf.nn.rnn_cell", BasicLSTMCell=BasicLSTMCell, BasicRNNCell=BasicRNNCell,
                     DropoutWrapper=DropoutWrapper, GRUCell=GRUCell, LSTMCell=LSTMCell,
                     LSTMStateTuple=LSTMStateTuple, MultiRNNCell=MultiRNNCell, RNNCell=RNNCell)

_nn_ops._nn.sigmoid_cross_entropy_with_logits = sigmoid_cross_entropy_with_logits
