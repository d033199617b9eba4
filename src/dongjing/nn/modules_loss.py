"""Losses as modules (CrossEntropyLoss, ...), thin wrappers over `losses.py`."""

from __future__ import annotations

from ..tensor import Tensor
from . import losses
from .module import Module


class CrossEntropyLoss(Module):
    def __init__(self, reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__()
        self.reduction, self.label_smoothing = reduction, label_smoothing

    def forward(self, logits: Tensor, target: Tensor) -> Tensor:
        return losses.cross_entropy(logits, target, self.reduction, self.label_smoothing)


class NLLLoss(Module):
    def __init__(self, reduction: str = "mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, log_probs: Tensor, target: Tensor) -> Tensor:
        return losses.nll_loss(log_probs, target, self.reduction)


class MSELoss(NLLLoss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return losses.mse_loss(input, target, self.reduction)


class BCEWithLogitsLoss(NLLLoss):
    def forward(self, logits: Tensor, target: Tensor) -> Tensor:
        return losses.binary_cross_entropy_with_logits(logits, target, self.reduction)
