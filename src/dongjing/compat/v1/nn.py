"""tf.nn: activations and the softmax / sigmoid cross-entropy losses, on dongjing ops."""

from __future__ import annotations

from ... import ops as _ops
from ...errors import DTypeError, GraphError
from .graphs import tf_function
from .math_ops import _t
from .unsupported import module_getattr, not_provided

__getattr__ = module_getattr("tf.nn")


def _axis(axis, dim, what: str) -> int:
    if axis is not None and dim is not None:
        raise GraphError(f"{what}: give axis or dim, not both")
    chosen = axis if axis is not None else dim
    return -1 if chosen is None else int(chosen)


@tf_function
def relu(features, name=None):
    """max(features, 0), elementwise."""
    return _ops.relu(_t(features))


@tf_function
def sigmoid(x, name=None):
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
    """value + bias (bias along the last dim)."""
    if data_format not in (None, "NHWC", "N...C"):
        not_provided(f"tf.nn.bias_add(data_format={data_format!r})")
    return _t(value) + bias


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


@tf_function
def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """x with elements zeroed with probability 1 - keep_prob, the rest scaled by 1/keep_prob;
    a fresh mask every run."""
    from ...ops import dropout_mask
    from ...tensor import Tensor

    if noise_shape is not None:
        not_provided("tf.nn.dropout(noise_shape=...)")
    if (keep_prob is None) == (rate is None):
        raise GraphError("tf.nn.dropout: give keep_prob or rate (exactly one)")
    drop = rate if rate is not None else None
    if isinstance(keep_prob, Tensor) or isinstance(drop, Tensor):
        not_provided("tf.nn.dropout with a tensor keep_prob/rate (feed a Python number "
                     "when building instead)")
    drop = float(drop) if drop is not None else 1.0 - float(keep_prob)
    if not 0.0 <= drop < 1.0:
        raise GraphError(f"tf.nn.dropout: keep probability {1 - drop} is not in (0, 1]")
    x = _t(x)
    if drop == 0.0:
        return x
    return x * dropout_mask(x, drop)
