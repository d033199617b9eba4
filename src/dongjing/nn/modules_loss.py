"""Losses as modules (CrossEntropyLoss, ...), thin wrappers over `losses.py` with PyTorch's
constructor arguments."""

from __future__ import annotations

from ..tensor import Tensor
from . import losses
from .module import Module


class _Loss(Module):
    def __init__(self, reduction: str = "mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{type(self).__name__}: reduction must be 'mean', 'sum' or 'none', "
                             f"got {reduction!r}")
        self.reduction = reduction

    def extra_repr(self) -> str:
        return "" if self.reduction == "mean" else f"reduction={self.reduction!r}"


class CrossEntropyLoss(_Loss):
    """`F.cross_entropy` as a module."""

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return losses.cross_entropy(input, target, self.weight, self.ignore_index,
                                    self.reduction, self.label_smoothing)


class NLLLoss(_Loss):
    """`F.nll_loss` as a module."""

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean"):
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return losses.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class MSELoss(_Loss):
    """`F.mse_loss` as a module."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return losses.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """`F.l1_loss` as a module."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return losses.l1_loss(input, target, self.reduction)


class BCELoss(_Loss):
    """`F.binary_cross_entropy` as a module."""

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean"):
        super().__init__(reduction)
        self.weight = weight

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return losses.binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """`F.binary_cross_entropy_with_logits` as a module."""

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean",
                 pos_weight: Tensor | None = None):
        super().__init__(reduction)
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return losses.binary_cross_entropy_with_logits(input, target, self.weight,
                                                       self.reduction, self.pos_weight)
