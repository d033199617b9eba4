"""PyTorch's margin, ranking and likelihood losses (`hinge_embedding_loss`,
`margin_ranking_loss`, `soft_margin_loss`, `multi_margin_loss`, `multilabel_margin_loss`,
`multilabel_soft_margin_loss`, `triplet_margin_loss`, `poisson_nll_loss`,
`gaussian_nll_loss`), composed of dongjing ops. `size_average`/`reduce` are PyTorch's
deprecated switches: given, they choose the reduction as PyTorch's do."""

from __future__ import annotations

import math

from .. import ops
from ..errors import ArgumentError, DTypeError, ShapeError
from ..ops.convert import as_tensor
from ..tensor import Tensor
from .distance import pairwise_distance
from .functional_activation import logsigmoid
from .losses import _reduce

__all__ = ["hinge_embedding_loss", "margin_ranking_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
           "poisson_nll_loss", "gaussian_nll_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss"]


def legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """PyTorch's rule for the deprecated `size_average` and `reduce` arguments."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _same_shape(name: str, *tensors) -> None:
    shapes = [t.shape for t in tensors]
    if any(s != shapes[0] for s in shapes):
        raise ShapeError(f"{name}: inputs must have one shape, got {', '.join(map(str, shapes))}")


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """x where the target is 1, max(0, margin - x) where it is -1."""
    x, y = as_tensor(input), as_tensor(target)
    zero = ops.zeros_like(x)
    loss = (ops.where(ops.ne(y, 1), ops.maximum(margin - x, zero), zero)
            + ops.where(ops.ne(y, -1), x, zero))
    return _reduce(loss, legacy_reduction(size_average, reduce, reduction),
                   "hinge_embedding_loss")


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """max(0, -y * (x1 - x2) + margin): y = 1 asks for x1 above x2, y = -1 below."""
    x1, x2, y = as_tensor(input1), as_tensor(input2), as_tensor(target)
    if x1.ndim != x2.ndim or x1.ndim != y.ndim:
        raise ShapeError(f"margin_ranking_loss: inputs of shapes {x1.shape}, {x2.shape} and "
                         f"{y.shape} must have one number of dims")
    loss = ops.relu(ops.neg(y) * (x1 - x2) + margin)
    return _reduce(loss, legacy_reduction(size_average, reduce, reduction),
                   "margin_ranking_loss")


def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                     reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """log(1 + exp(-y * x)), the logistic loss of targets y in {1, -1}."""
    x, y = as_tensor(input), as_tensor(target)
    _same_shape("soft_margin_loss", x, y)
    loss = ops.neg(logsigmoid(y * x))
    return _reduce(loss, legacy_reduction(size_average, reduce, reduction), "soft_margin_loss")


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    """The mean over classes of the binary logistic losses of (N, C) logits against 0/1
    targets; `weight` scales each class."""
    x, y = as_tensor(input), as_tensor(target)
    _same_shape("multilabel_soft_margin_loss", x, y)
    loss = ops.neg(y * logsigmoid(x) + (1.0 - y) * logsigmoid(ops.neg(x)))
    if weight is not None:
        loss = loss * as_tensor(weight)
    classes = x.shape[-1] if x.ndim else 1
    loss = ops.sum(loss, x.ndim - 1) / classes if x.ndim else loss
    return _reduce(loss, legacy_reduction(size_average, reduce, reduction),
                   "multilabel_soft_margin_loss")


def _class_targets(name: str, x: Tensor, y: Tensor):
    if x.ndim not in (1, 2):
        raise ShapeError(f"{name}: expects (N, C) or (C,) input, got shape {x.shape}")
    if y.dtype.kind not in "iu":
        raise DTypeError(f"{name}: target must hold integer class indices, got {y.dtype}")


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average: bool | None = None,
                      reduce: bool | None = None,
                      reduction: str = "mean") -> Tensor:
    """The multi-class hinge loss: sum over classes i != y of max(0, margin - x[y] + x[i])^p,
    divided by the number of classes; `weight` scales by the target class's weight."""
    if p not in (1, 2):
        raise ArgumentError(f"multi_margin_loss: p must be 1 or 2, got {p}")
    x, y = as_tensor(input), as_tensor(target)
    _class_targets("multi_margin_loss", x, y)
    rows = x if x.ndim == 2 else ops.unsqueeze(x, 0)
    labels = ops.reshape(y, (-1, 1))
    classes = rows.shape[1]
    picked = ops.gather(rows, 1, labels)  # x[y], (N, 1)
    hinge = ops.relu(rows - picked + margin)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * ops.unsqueeze(ops.index_select(as_tensor(weight), 0,
                                                        ops.reshape(y, (-1,))), 1)
    others = 1.0 - ops.one_hot(ops.reshape(y, (-1,)), classes, dtype=hinge.dtype)
    loss = ops.sum(hinge * others, 1) / classes
    loss = loss if x.ndim == 2 else loss[0]
    return _reduce(loss, legacy_reduction(size_average, reduce, reduction), "multi_margin_loss")


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                           reduce: bool | None = None,
                           reduction: str = "mean") -> Tensor:
    """The multi-label hinge loss: each row of `target` lists class indices, ended by the
    first -1; sum over listed j and unlisted i of max(0, 1 - (x[j] - x[i])), over C."""
    x, y = as_tensor(input), as_tensor(target)
    _class_targets("multilabel_margin_loss", x, y)
    if y.shape != x.shape:
        raise ShapeError(f"multilabel_margin_loss: target of shape {y.shape} must have the "
                         f"input's shape {x.shape}")
    rows = x if x.ndim == 2 else ops.unsqueeze(x, 0)
    labels = y if y.ndim == 2 else ops.unsqueeze(y, 0)
    classes = rows.shape[1]
    listed = ops.cumprod(ops.cast(ops.ne(labels, -1), rows.dtype), 1)  # before the first -1
    hits = ops.one_hot(ops.where(ops.ge(labels, 0), labels, ops.zeros_like(labels)), classes,
                       dtype=rows.dtype) * ops.unsqueeze(listed, -1)
    is_target = ops.clip(ops.sum(hits, 1), 0.0, 1.0)  # (N, C): 1 for listed classes
    pairs = ops.relu(1.0 - ops.unsqueeze(rows, 2) + ops.unsqueeze(rows, 1))  # [n, j, i]
    mask = ops.unsqueeze(is_target, 2) * ops.unsqueeze(1.0 - is_target, 1)
    loss = ops.sum(pairs * mask, (1, 2)) / classes
    loss = loss if x.ndim == 2 else loss[0]
    return _reduce(loss, legacy_reduction(size_average, reduce, reduction),
                   "multilabel_margin_loss")


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True,
                     full: bool = False, size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of a Poisson target: exp(x) - t*x for log-rates
    (`log_input`), else x - t*log(x + eps); `full` adds Stirling's term for t > 1."""
    x, t = as_tensor(input), as_tensor(target)
    loss = ops.exp(x) - t * x if log_input else x - t * ops.log(x + eps)
    if full:
        safe = ops.where(ops.gt(t, 1.0), t, ops.ones_like(t))
        stirling = safe * ops.log(safe) - safe + ops.log(safe * (2 * math.pi)) * 0.5
        loss = loss + ops.where(ops.gt(t, 1.0), stirling, ops.zeros_like(stirling))
    return _reduce(loss, legacy_reduction(size_average, reduce, reduction), "poisson_nll_loss")


def gaussian_nll_loss(input: Tensor, target: Tensor, var, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """0.5 * (log(var) + (x - t)^2 / var) (+ 0.5 log(2 pi) with `full`). `var` has the input's
    shape, or one fewer dim, or a last dim of 1 (one variance per sample), or is a number; it
    is clamped at `eps` for the value only (the gradient passes through, as PyTorch's)."""
    x, t = as_tensor(input), as_tensor(target)
    v = as_tensor(float(var), x) if isinstance(var, (int, float)) else as_tensor(var)
    if isinstance(var, (int, float)) and var < 0:
        raise ArgumentError(f"gaussian_nll_loss: var must be non-negative, got {var}")
    if v.ndim and v.shape != x.shape:
        if x.shape[:-1] == v.shape:
            v = ops.unsqueeze(v, -1)
        elif not (x.shape[:-1] == v.shape[:-1] and v.shape[-1] == 1):
            raise ShapeError(f"gaussian_nll_loss: var of shape {v.shape} does not fit an "
                             f"input of shape {x.shape}")
    if v.ndim == 0:
        v = ops.full_like(x, 1.0) * v
    clamped = v + (ops.clip(v, eps, None) - v).detach()
    loss = (ops.log(clamped) + (x - t) * (x - t) / clamped) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")


def _triplet(name, anchor, positive, negative, distance, margin, swap, reduction):
    a, p, n = as_tensor(anchor), as_tensor(positive), as_tensor(negative)
    if not a.ndim == p.ndim == n.ndim:
        raise ShapeError(f"{name}: anchor, positive and negative must have one number of dims, "
                         f"got {a.shape}, {p.shape} and {n.shape}")
    if margin <= 0:
        raise ArgumentError(f"{name}: margin must be greater than 0, got {margin}")
    d_pos, d_neg = distance(a, p), distance(a, n)
    if swap:
        d_neg = ops.minimum(d_neg, distance(p, n))
    loss = ops.relu(d_pos - d_neg + margin)
    return _reduce(loss, reduction, name)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average: bool | None = None,
                        reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """max(0, d(a, p) - d(a, n) + margin) with the p-norm pairwise distance; `swap` uses the
    smaller of d(a, n) and d(p, n)."""
    return _triplet("triplet_margin_loss", anchor, positive, negative,
                    lambda u, v: pairwise_distance(u, v, p, eps), margin, swap,
                    legacy_reduction(size_average, reduce, reduction))


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """`triplet_margin_loss` with any distance function (default: pairwise_distance)."""
    return _triplet("triplet_margin_with_distance_loss", anchor, positive, negative,
                    distance_function or pairwise_distance, margin, swap, reduction)

