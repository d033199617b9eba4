"""Loss functions (PyTorch names and reductions), composed of dongjing ops, so they work on
symbolic tensors with an unknown batch dim too."""

from __future__ import annotations

import warnings

from .. import ops
from ..autocasting import autocast_policy
from ..dtypes import is_floating
from ..errors import DTypeError, ShapeError
from ..ops import one_hot
from ..ops.convert import as_tensor
from ..tensor import Tensor
from .losses_fused import fused_cross_entropy


def _reduce(loss: Tensor, reduction: str, op: str) -> Tensor:
    if reduction == "mean":
        return ops.mean(loss)
    if reduction == "sum":
        return ops.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """`reduction` from PyTorch's deprecated `size_average=` and `reduce=` where either is given
    (both default to True: `reduce=False` is 'none', `size_average=False` 'sum'), as PyTorch."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  "reduction='...' instead", UserWarning, stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def check_loss_weight(name: str, input: Tensor, weight: Tensor | None) -> None:
    if weight is not None and tuple(as_tensor(weight).shape) != tuple(as_tensor(input).shape):
        raise ValueError(f"{name}: weight of shape {tuple(as_tensor(weight).shape)} must have "
                         f"the input's shape {tuple(as_tensor(input).shape)}")


def _weighted_reduce(name: str, loss: Tensor, weight: Tensor | None, reduction: str) -> Tensor:
    """PyTorch's elementwise `weight=` of mse_loss and l1_loss: the weighted terms, summed, or
    their weighted mean (divided by the sum of the weights)."""
    if weight is None:
        return _reduce(loss, reduction, name)
    weighted = loss * weight
    if reduction == "mean":
        return ops.sum(weighted) / ops.sum(as_tensor(weight))
    return _reduce(weighted, reduction, name)


def _class_last(x: Tensor) -> Tensor:
    """(N, C, d1, ...) -> (N, d1, ..., C): the class dim moved last."""
    if x.ndim <= 2:
        return x
    return ops.permute(x, (0,) + tuple(range(2, x.ndim)) + (1,))


def _pick(log_probs: Tensor, target: Tensor, num_classes, weight, ignore_index: int,
          smoothing: float = 0.0) -> tuple[Tensor, Tensor | None]:
    """Per-example -log_probs[target] (class dim last), zero where target == ignore_index, and
    the divisor of the mean (the summed weights of the kept examples; None: the plain count)."""
    masked = target._node is not None or bool((target._data == ignore_index).any())
    if masked and weight is None and not smoothing:
        # ignored labels give zero rows: their loss is 0, and the rows' sum counts the kept ones
        q = one_hot(target, num_classes, log_probs.dtype, ignore_index=ignore_index)
        return ops.neg(ops.sum(q * log_probs, -1)), ops.sum(q)
    keep = ops.ne(target, ignore_index) if masked else None
    safe = ops.where(keep, target, ops.zeros_like(target)) if masked else target
    q = one_hot(safe, num_classes, log_probs.dtype)
    if smoothing:
        q = q * (1.0 - smoothing) + smoothing / num_classes
    loss = ops.neg(ops.sum(q * log_probs, -1))
    if weight is None and not masked:
        return loss, None
    w = ops.cast(keep, log_probs.dtype) if masked else ops.ones_like(loss)
    if weight is not None:
        w = w * ops.sum(one_hot(safe, num_classes, log_probs.dtype) * as_tensor(weight), -1)
    return loss * w, ops.sum(w)


def _reduce_weighted(loss: Tensor, total: Tensor | None, reduction: str, op: str) -> Tensor:
    if reduction == "mean" and total is not None:
        return ops.sum(loss) / total
    return _reduce(loss, reduction, op)


def _check_weight(weight, num_classes, op: str) -> None:
    if weight is not None and tuple(as_tensor(weight).shape) != (num_classes,):
        raise ShapeError(f"{op}: weight of shape {as_tensor(weight).shape} must have one entry "
                         f"per class ({num_classes},)")


@autocast_policy("nll_loss")
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Mean of -input[i, target[i]] over the batch (class dim 1); targets equal to
    `ignore_index` count for nothing; `weight` scales each class (the mean is weighted)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    log_probs, target = as_tensor(input), as_tensor(target)
    if isinstance(weight, str):
        raise TypeError(f"nll_loss: weight must be a tensor, got {weight!r} (pass reduction= by "
                        "keyword)")
    if target.dtype.kind not in "iu":
        raise DTypeError(f"nll_loss: target must hold integer class indices, got {target.dtype}")
    num_classes = log_probs.shape[1] if log_probs.ndim > 1 else log_probs.shape[0]
    _check_weight(weight, num_classes, "nll_loss")
    loss, total = _pick(_class_last(log_probs), target, num_classes, weight, ignore_index)
    return _reduce_weighted(loss, total, reduction, "nll_loss")


@autocast_policy("cross_entropy")
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy of logits `input` (N, C, ...) against integer classes (N, ...) or
    probabilities (N, C, ...); `label_smoothing` mixes the target with the uniform distribution;
    integer targets equal to `ignore_index` count for nothing; `weight` scales each class."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    logits, target = as_tensor(input), as_tensor(target)
    if isinstance(weight, str):
        raise TypeError(f"cross_entropy: weight must be a tensor, got {weight!r} (pass "
                        "reduction= by keyword)")
    if logits.ndim < 1:
        raise ShapeError("cross_entropy: logits need at least one dim (the classes)")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    class_dim = 1 if logits.ndim > 1 else 0
    num_classes = logits.shape[class_dim]
    _check_weight(weight, num_classes, "cross_entropy")
    if weight is None and not label_smoothing and target.dtype.kind in "iu":
        fused = fused_cross_entropy(logits, target, reduction, ignore_index)
        if fused is not None:  # eager NumPy logits (N, C), valid classes: one tape node
            return fused
    log_probs = _class_last(ops.log_softmax(logits, class_dim))
    if target.dtype.kind in "iu":
        if target.ndim != log_probs.ndim - 1:
            raise ShapeError(
                f"cross_entropy: integer targets of shape {target.shape} do not fit logits of "
                f"shape {logits.shape}"
            )
        if weight is not None and label_smoothing:
            raise NotImplementedError("cross_entropy: weight together with label_smoothing is "
                                      "not supported")
        loss, total = _pick(log_probs, target, num_classes, weight, ignore_index,
                            label_smoothing)
        return _reduce_weighted(loss, total, reduction, "cross_entropy")
    if not is_floating(target.dtype):
        raise DTypeError(f"cross_entropy: target must be integer classes or floats, got "
                         f"{target.dtype}")
    if weight is not None:
        raise NotImplementedError("cross_entropy: weight with probability targets is not "
                                  "supported")
    q = _class_last(target)
    if label_smoothing:
        q = q * (1.0 - label_smoothing) + label_smoothing / num_classes
    return _reduce(ops.neg(ops.sum(q * log_probs, -1)), reduction, "cross_entropy")


@autocast_policy("mse_loss")
def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """Mean squared error; `weight` (the input's shape) weighs each term (the mean is then the
    weighted mean), as PyTorch's."""
    check_loss_weight("mse_loss", input, weight)
    diff = as_tensor(input) - target
    return _weighted_reduce("mse_loss", diff * diff, weight,
                            legacy_reduction(size_average, reduce, reduction))


@autocast_policy("l1_loss")
def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """Mean absolute error; `weight` as `mse_loss`'s."""
    check_loss_weight("l1_loss", input, weight)
    return _weighted_reduce("l1_loss", ops.abs(as_tensor(input) - target), weight,
                            legacy_reduction(size_average, reduce, reduction))


@autocast_policy("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: bool | None = None,
                                     reduce: bool | None = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid + binary cross-entropy in one stable expression; `weight` scales each element,
    `pos_weight` the positive term."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if isinstance(weight, str):
        raise TypeError(f"binary_cross_entropy_with_logits: weight must be a tensor, got "
                        f"{weight!r} (pass reduction= by keyword)")
    x = as_tensor(input)
    # log(1 + exp(-|x|)) + max(-x, 0) is -log(sigmoid(x)) without overflow
    log_sig_neg = ops.log(ops.exp(ops.neg(ops.abs(x))) + 1.0) + ops.relu(ops.neg(x))
    if pos_weight is None:
        loss = (1.0 - target) * x + log_sig_neg
    else:
        loss = (1.0 - target) * x + ((pos_weight - 1.0) * target + 1.0) * log_sig_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


@autocast_policy("binary_cross_entropy")
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """-(t log(x) + (1 - t) log(1 - x)) for probabilities `input` in [0, 1], each log clamped
    at -100 as PyTorch does."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, target = as_tensor(input), as_tensor(target)
    if x._node is None and x._data.size and (x._data.min() < 0 or x._data.max() > 1):
        raise ValueError("binary_cross_entropy: all elements of input should be between 0 and 1")
    if target.shape != x.shape and None not in target.shape + x.shape:
        raise ShapeError(f"binary_cross_entropy: target of shape {target.shape} does not match "
                         f"input of shape {x.shape}")
    loss = ops.bce.binary_cross_entropy(x, target)  # PyTorch's gradient at x = 0 or 1
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy")
