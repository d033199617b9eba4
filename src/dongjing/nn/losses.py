"""Loss functions (PyTorch names and reductions), composed of dongjing ops, so they work on
symbolic tensors with an unknown batch dim too."""

from __future__ import annotations

from .. import ops
from ..errors import DTypeError, ShapeError
from ..ops import one_hot
from ..ops.convert import as_tensor
from ..tensor import Tensor


def _reduce(loss: Tensor, reduction: str, op: str) -> Tensor:
    if reduction == "mean":
        return ops.mean(loss)
    if reduction == "sum":
        return ops.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _class_last(x: Tensor) -> Tensor:
    """(N, C, d1, ...) -> (N, d1, ..., C): the class dim moved last."""
    if x.ndim <= 2:
        return x
    return ops.permute(x, (0,) + tuple(range(2, x.ndim)) + (1,))


def nll_loss(log_probs: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean of -log_probs[i, target[i]] over the batch (class dim 1)."""
    log_probs, target = as_tensor(log_probs), as_tensor(target)
    if target.dtype.kind not in "iu":
        raise DTypeError(f"nll_loss: target must hold integer class indices, got {target.dtype}")
    num_classes = log_probs.shape[1] if log_probs.ndim > 1 else log_probs.shape[0]
    picked = ops.sum(one_hot(target, num_classes, log_probs.dtype) * _class_last(log_probs), -1)
    return _reduce(ops.neg(picked), reduction, "nll_loss")


def cross_entropy(logits: Tensor, target: Tensor, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy of `logits` (N, C) against integer classes (N,) or probabilities
    (N, C); `label_smoothing` mixes the target with the uniform distribution."""
    logits, target = as_tensor(logits), as_tensor(target)
    if logits.ndim < 1:
        raise ShapeError("cross_entropy: logits need at least one dim (the classes)")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    class_dim = 1 if logits.ndim > 1 else 0
    num_classes = logits.shape[class_dim]
    log_probs = _class_last(ops.log_softmax(logits, class_dim))
    if target.dtype.kind in "iu":
        if target.ndim != log_probs.ndim - 1:
            raise ShapeError(
                f"cross_entropy: integer targets of shape {target.shape} do not fit logits of "
                f"shape {logits.shape}"
            )
        q = one_hot(target, num_classes, log_probs.dtype)
    elif target.dtype.kind == "f":
        q = _class_last(target)
    else:
        raise DTypeError(f"cross_entropy: target must be integer classes or floats, got "
                         f"{target.dtype}")
    if label_smoothing:
        q = q * (1.0 - label_smoothing) + label_smoothing / num_classes
    return _reduce(ops.neg(ops.sum(q * log_probs, -1)), reduction, "cross_entropy")


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean squared error."""
    diff = as_tensor(input) - target
    return _reduce(diff * diff, reduction, "mse_loss")


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean absolute error."""
    return _reduce(ops.abs(as_tensor(input) - target), reduction, "l1_loss")


def binary_cross_entropy_with_logits(logits: Tensor, target: Tensor, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid + binary cross-entropy in one stable expression."""
    x = as_tensor(logits)
    # log(1 + exp(-|x|)) + max(-x, 0) is -log(sigmoid(x)) without overflow
    log_sig_neg = ops.log(ops.exp(ops.neg(ops.abs(x))) + 1.0) + ops.relu(ops.neg(x))
    if pos_weight is None:
        loss = (1.0 - target) * x + log_sig_neg
    else:
        weight = (pos_weight - 1.0) * target + 1.0
        loss = (1.0 - target) * x + weight * log_sig_neg
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")
