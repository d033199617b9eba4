"""PyTorch's other activation and dropout modules (`Softplus`, `Hardtanh`, `PReLU`, `SELU`,
`AlphaDropout`, ...), each a thin module over its function in `functional_activation` or
`functional_dropout`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import ops
from ..errors import ArgumentError, ShapeError
from ..tensor import Tensor
from . import functional_activation as A
from . import functional_dropout as D
from .factory import place_new
from .module import Module
from .parameter import Parameter

if TYPE_CHECKING:
    from ..types import DeviceLike, DTypeLike


class _Inplace(Module):
    fn = None

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self).fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class _Stateless(Module):
    fn = None

    def __init__(self, *args, **kwargs):  # PyTorch's stateless activations take and ignore any
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return type(self).fn(input)


class ReLU6(_Inplace):
    """min(max(x, 0), 6)."""
    fn = staticmethod(A.relu6)


class Hardsigmoid(_Inplace):
    """relu6(x + 3) / 6."""
    fn = staticmethod(A.hardsigmoid)


class Hardswish(_Inplace):
    """x * relu6(x + 3) / 6."""
    fn = staticmethod(A.hardswish)


class Mish(_Inplace):
    """x * tanh(softplus(x))."""
    fn = staticmethod(A.mish)


class SELU(_Inplace):
    """Scaled ELU with PyTorch's self-normalizing constants."""
    fn = staticmethod(A.selu)


class LogSigmoid(_Stateless):
    """log(sigmoid(x))."""
    fn = staticmethod(A.logsigmoid)


class Softsign(_Stateless):
    """x / (1 + |x|)."""
    fn = staticmethod(A.softsign)


class Tanhshrink(_Stateless):
    """x - tanh(x)."""
    fn = staticmethod(A.tanhshrink)


class Softmax2d(_Stateless):
    """softmax over the channels of an (N, C, H, W) or (C, H, W) input."""

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            raise ShapeError(f"Softmax2d: expects a 3-d or 4-d input, got shape {input.shape}")
        return ops.softmax(input, -3)


class CELU(Module):
    """x where x > 0, else alpha * (exp(x / alpha) - 1)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return A.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta (x itself above `threshold`)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return A.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """x clamped to [min_val, max_val] (`min_value`/`max_value`: PyTorch's old names)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None):
        super().__init__()
        self.min_val = min_val if min_value is None else min_value
        self.max_val = max_val if max_value is None else max_value
        if self.min_val > self.max_val:
            raise ArgumentError(f"Hardtanh: min_val={self.min_val} must not exceed "
                                f"max_val={self.max_val}")
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return A.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class _Shrink(Module):
    fn = None

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return type(self).fn(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(_Shrink):
    """x where |x| > lambd, else 0."""
    fn = staticmethod(A.hardshrink)


class Softshrink(_Shrink):
    """x shrunk towards 0 by lambd (0 within [-lambd, lambd])."""
    fn = staticmethod(A.softshrink)


class GLU(Module):
    """a * sigmoid(b) for the two halves a, b of `dim`."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return A.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Threshold(Module):
    """x where x > threshold, else value."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        return A.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}"


class Softmin(Module):
    """softmax(-x) along `dim`."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return A.softmin(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """x where x > 0, else a * x with a learned slope `a` (one, or one per channel)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25,
                 device: DeviceLike | None = None, dtype: DTypeLike | None = None):
        super().__init__()
        if num_parameters < 1:
            raise ArgumentError(f"PReLU: num_parameters must be >= 1, got {num_parameters}")
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(np.full(num_parameters, init, np.float32))
        place_new(self, device, dtype)

    def reset_parameters(self) -> None:
        self.weight._data[...] = self.init

    def forward(self, input: Tensor) -> Tensor:
        return A.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU: slopes drawn from U(lower, upper) in training, their mean in
    evaluation."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return A.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}"


class _DropoutModule(Module):
    fn = None

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ArgumentError(f"{type(self).__name__}: p must be in [0, 1], got {p}")
        self.p, self.inplace = float(p), inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self).fn(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutModule):
    """Zero whole channels of (N, C, L) inputs with probability `p` (training only)."""
    fn = staticmethod(D.dropout1d)


class Dropout3d(_DropoutModule):
    """Zero whole channels of (N, C, D, H, W) inputs with probability `p` (training only)."""
    fn = staticmethod(D.dropout3d)


class AlphaDropout(_DropoutModule):
    """Dropout that keeps a SELU network's mean and variance (training only)."""
    fn = staticmethod(D.alpha_dropout)


class FeatureAlphaDropout(_DropoutModule):
    """Alpha dropout of whole channels (training only)."""
    fn = staticmethod(D.feature_alpha_dropout)
