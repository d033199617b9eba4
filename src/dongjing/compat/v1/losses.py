"""tf.losses: per-element losses weighted by `weights` and reduced as TF 1.x reduces them
(default SUM_BY_NONZERO_WEIGHTS: the weighted sum over the number of non-zero weights)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import ops as _ops
from ...errors import GraphError
from .graphs import tf_function
from .math_ops import _t
from .nn import (
    sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)
from .unsupported import module_getattr

if TYPE_CHECKING:
    from ...tensor import Tensor
    from ...types import TensorLike

__getattr__ = module_getattr("tf.losses")


class Reduction:
    """How a weighted loss is reduced (TF's tf.losses.Reduction)."""

    NONE = "none"
    SUM = "weighted_sum"
    MEAN = "weighted_mean"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_BY_NONZERO_WEIGHTS)


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=None,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """losses * weights (broadcast), reduced by `reduction`."""
    if reduction not in Reduction.all():
        raise GraphError(f"tf.losses: unknown reduction {reduction!r}")
    losses = _t(losses)
    if losses.dtype.kind != "f":
        losses = _ops.cast(losses, "float32")
    weights = _ops.cast(_t(weights), losses.dtype)
    weighted = losses * weights
    if reduction == Reduction.NONE:
        return weighted
    total = _ops.sum(weighted)
    if reduction == Reduction.SUM:
        return total
    full_weights = weights + _ops.zeros_like(losses)
    if reduction == Reduction.MEAN:
        return _safe_div(total, _ops.sum(full_weights))
    if reduction == Reduction.SUM_OVER_BATCH_SIZE:
        return total / _ops.cast(_ops.sum(_ops.ones_like(losses)), losses.dtype)
    nonzero = _ops.sum(_ops.cast(_ops.ne(full_weights, 0.0), losses.dtype))
    return _safe_div(total, nonzero)


def _safe_div(num, den):
    """num / den, 0 where den is 0 (as TF's losses divide)."""
    safe = _ops.where(_ops.eq(den, 0.0), _ops.ones_like(den), den)
    return _ops.where(_ops.eq(den, 0.0), _ops.zeros_like(num), num / safe)


@tf_function
def mean_squared_error(labels, predictions, weights=1.0, scope=None, loss_collection=None,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """(predictions - labels) ** 2, weighted and reduced."""
    p = _t(predictions)
    d = p - _ops.cast(_t(labels), p.dtype)
    return compute_weighted_loss(d * d, weights, reduction=reduction)


@tf_function
def absolute_difference(labels, predictions, weights=1.0, scope=None, loss_collection=None,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """|predictions - labels|, weighted and reduced."""
    p = _t(predictions)
    return compute_weighted_loss(_ops.abs(p - _ops.cast(_t(labels), p.dtype)), weights,
                                 reduction=reduction)


@tf_function
def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None, loss_collection=None,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """0.5 e^2 where |e| <= delta, else delta (|e| - 0.5 delta), e = predictions - labels."""
    p = _t(predictions)
    error = _ops.abs(p - _ops.cast(_t(labels), p.dtype))
    quadratic = _ops.minimum(error, float(delta))
    linear = error - quadratic
    return compute_weighted_loss(0.5 * quadratic * quadratic + float(delta) * linear, weights,
                                 reduction=reduction)


@tf_function
def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None, loss_collection=None,
             reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """-(labels log(p + eps) + (1 - labels) log(1 - p + eps))."""
    p = _t(predictions)
    y = _ops.cast(_t(labels), p.dtype)
    losses = -(y * _ops.log(p + epsilon) + (1.0 - y) * _ops.log(1.0 - p + epsilon))
    return compute_weighted_loss(losses, weights, reduction=reduction)


@tf_function
def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=None,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Sigmoid cross-entropy of each logit (labels smoothed toward 1/2 if asked)."""
    x = _t(logits)
    y = _ops.cast(_t(multi_class_labels), x.dtype)
    if label_smoothing:
        y = y * (1.0 - label_smoothing) + 0.5 * label_smoothing
    return compute_weighted_loss(sigmoid_cross_entropy_with_logits(labels=y, logits=x), weights,
                                 reduction=reduction)


@tf_function
def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=None, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Softmax cross-entropy per row of one-hot labels (smoothed if asked), weighted."""
    x = _t(logits)
    y = _ops.stop_gradient(_ops.cast(_t(onehot_labels), x.dtype))
    if label_smoothing:
        classes = x.shape[-1]
        y = y * (1.0 - label_smoothing) + label_smoothing / classes
    return compute_weighted_loss(softmax_cross_entropy_with_logits_v2(labels=y, logits=x),
                                 weights, reduction=reduction)


@tf_function
def sparse_softmax_cross_entropy(labels: TensorLike, logits: TensorLike,
                                 weights: float | Tensor = 1.0, scope: str | None = None,
                                 loss_collection: str | None = None,
                                 reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Softmax cross-entropy per row for integer labels, weighted."""
    return compute_weighted_loss(sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                          logits=logits),
                                 weights, reduction=reduction)
