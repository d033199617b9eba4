"""Losses as modules (CrossEntropyLoss, ...), thin wrappers over `losses.py` with PyTorch's
constructor arguments (the deprecated `size_average=` and `reduce=` mapped onto `reduction` as
PyTorch maps them)."""

from __future__ import annotations

from ..tensor import Tensor
from . import losses
from .module import Module


class _Loss(Module):
    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean"):
        super().__init__()
        reduction = losses.legacy_reduction(size_average, reduce, reduction)
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{type(self).__name__}: reduction must be 'mean', 'sum' or 'none', "
                             f"got {reduction!r}")
        self.reduction = reduction

    def extra_repr(self) -> str:
        return "" if self.reduction == "mean" else f"reduction={self.reduction!r}"


class CrossEntropyLoss(_Loss):
    """`F.cross_entropy` as a module."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean",
                 label_smoothing: float = 0.0):
        super().__init__(size_average, reduce, reduction)
        self.weight, self.ignore_index = weight, ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return losses.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                                    reduction=self.reduction,
                                    label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    """`F.nll_loss` as a module."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return losses.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction)


class MSELoss(_Loss):
    """`F.mse_loss` as a module."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return losses.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """`F.l1_loss` as a module."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return losses.l1_loss(input, target, reduction=self.reduction)


class BCELoss(_Loss):
    """`F.binary_cross_entropy` as a module."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.weight = weight

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return losses.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """`F.binary_cross_entropy_with_logits` as a module."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean",
                 pos_weight: Tensor | None = None):
        super().__init__(size_average, reduce, reduction)
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return losses.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight)
