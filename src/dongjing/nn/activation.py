"""Activations and dropout as modules."""

from __future__ import annotations

from ..errors import ArgumentError
from ..tensor import Tensor
from ..validation import check_number
from . import functional as F
from .module import Module


class ReLU(Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Sigmoid(Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class GELU(Module):
    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softmax(Module):
    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, self.dim)


class Dropout(Module):
    """Zero elements with probability `p` in training mode (masks from `dj.manual_seed`)."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        check_number("nn.Dropout", "p", p)
        if not 0.0 <= p <= 1.0:
            raise ArgumentError(f"nn.Dropout: argument 'p' must be in [0, 1], got {p}")
        self.p = float(p)

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
