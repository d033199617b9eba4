"""More of PyTorch's losses: `kl_div`, `smooth_l1_loss`, `huber_loss`,
`cosine_embedding_loss`, and their layers, composed of dongjing ops."""

from __future__ import annotations

from .. import ops
from ..autocasting import autocast_policy
from ..errors import ShapeError
from ..ops.convert import as_tensor
from ..tensor import Tensor
from .losses import _reduce, check_loss_weight, legacy_reduction
from .module import Module


@autocast_policy("kl_div")
def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,
           reduce: bool | None = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL(target || exp(input)) pointwise: target * (log target - input), 0 where target is 0;
    `input` holds log-probabilities (and `target` too with `log_target`). `reduction`
    "batchmean" divides the sum by the batch size (the mathematically right mean)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = as_tensor(input), as_tensor(target)
    if log_target:
        loss = ops.exp(t) * (t - x)
    else:
        positive = ops.gt(t, 0.0)
        log_t = ops.log(ops.where(positive, t, ops.ones_like(t)))
        loss = ops.where(positive, t * (log_t - x), ops.zeros_like(t * x))
    if reduction == "batchmean":
        return ops.sum(loss) / (ops.count(loss, (0,), loss.dtype) if loss.ndim else 1.0)
    return _reduce(loss, reduction, "kl_div")


@autocast_policy("smooth_l1_loss")
def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                   reduce: bool | None = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target); beta 0 is L1."""
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    reduction = legacy_reduction(size_average, reduce, reduction)
    d = ops.abs(as_tensor(input) - as_tensor(target))
    if beta == 0:
        return _reduce(d, reduction, "smooth_l1_loss")
    loss = ops.where(ops.lt(d, beta), d * d * (0.5 / beta), d - 0.5 * beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


@autocast_policy("huber_loss")
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean",
               delta: float = 1.0, weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| <= delta, else delta (|d| - 0.5 delta): smooth L1 scaled by delta
    (`weight` scales each element's term before the reduction)."""
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    check_loss_weight("huber_loss", input, weight)
    d = ops.abs(as_tensor(input) - as_tensor(target))
    loss = ops.where(ops.le(d, delta), d * d * 0.5, (d - 0.5 * delta) * delta)
    return _reduce(loss if weight is None else loss * weight, reduction, "huber_loss")


@autocast_policy("cosine_embedding_loss")
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1 (cos
    along dim 1 of (N, D) inputs, or of 1-d inputs)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    x1, x2, y = as_tensor(input1), as_tensor(input2), as_tensor(target)
    if x1.ndim not in (1, 2) or x1.shape != x2.shape:
        raise ShapeError(f"cosine_embedding_loss: expects two (N, D) or (D,) inputs of one "
                         f"shape, got {x1.shape} and {x2.shape}")
    dim = x1.ndim - 1
    eps = 1e-12  # PyTorch's: added to each squared magnitude
    dot = ops.sum(x1 * x2, dim)
    cos = dot / ops.sqrt((ops.sum(x1 * x1, dim) + eps) * (ops.sum(x2 * x2, dim) + eps))
    zero = ops.zeros_like(cos)
    loss = ops.where(ops.eq(y, 1), 1.0 - cos,
                     ops.where(ops.eq(y, -1), ops.maximum(cos - margin, zero), zero))
    return _reduce(loss, reduction, "cosine_embedding_loss")


class KLDivLoss(Module):
    """`kl_div` as a layer."""

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean",
                 log_target: bool = False):
        super().__init__()
        reduction = legacy_reduction(size_average, reduce, reduction)
        self.reduction, self.log_target = reduction, log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class SmoothL1Loss(Module):
    """`smooth_l1_loss` as a layer."""

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean",
                 beta: float = 1.0):
        super().__init__()
        reduction = legacy_reduction(size_average, reduce, reduction)
        self.reduction, self.beta = reduction, beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(Module):
    """`huber_loss` as a layer."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__()
        self.reduction, self.delta = reduction, delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return huber_loss(input, target, self.reduction, self.delta)


class CosineEmbeddingLoss(Module):
    """`cosine_embedding_loss` as a layer."""

    def __init__(self, margin: float = 0.0, size_average: bool | None = None,
                 reduce: bool | None = None,
                 reduction: str = "mean"):
        super().__init__()
        reduction = legacy_reduction(size_average, reduce, reduction)
        self.margin, self.reduction = margin, reduction

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return cosine_embedding_loss(input1, input2, target, self.margin,
                                     reduction=self.reduction)
