"""The pooling layers over `pooling_nd`'s functions: `MaxPool3d`, `AvgPool3d`, `LPPool1d/2d/3d`,
`AdaptiveAvgPool1d/3d`, `AdaptiveMaxPool1d/2d/3d` and `MaxUnpool1d/2d/3d`, with PyTorch's
constructor arguments."""

from __future__ import annotations

from ..tensor import Tensor
from . import pooling_nd as P
from .module import Module


class MaxPool3d(Module):
    """The largest value of each (D, H, W) window."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor):
        return P.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool3d(Module):
    """The mean of each (D, H, W) window."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return P.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _LPPool(Module):
    fn = None

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return type(self).fn(input, self.norm_type, self.kernel_size, self.stride,
                             self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPool):
    """(sum of x^p over each window)^(1/p) over (N, C, L)."""
    fn = staticmethod(P.lp_pool1d)


class LPPool2d(_LPPool):
    """(sum of x^p over each window)^(1/p) over (N, C, H, W)."""
    fn = staticmethod(P.lp_pool2d)


class LPPool3d(_LPPool):
    """(sum of x^p over each window)^(1/p) over (N, C, D, H, W)."""
    fn = staticmethod(P.lp_pool3d)


class _Adaptive(Module):
    fn = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor):
        return type(self).fn(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _AdaptiveMax(_Adaptive):
    def __init__(self, output_size, return_indices: bool = False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor):
        return type(self).fn(input, self.output_size, self.return_indices)


class AdaptiveAvgPool1d(_Adaptive):
    """Average pooling to a fixed length."""
    fn = staticmethod(P.adaptive_avg_pool1d)


class AdaptiveAvgPool3d(_Adaptive):
    """Average pooling to a fixed (D, H, W)."""
    fn = staticmethod(P.adaptive_avg_pool3d)


class AdaptiveMaxPool1d(_AdaptiveMax):
    """Max pooling to a fixed length."""
    fn = staticmethod(P.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMax):
    """Max pooling to a fixed (H, W)."""
    fn = staticmethod(P.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMax):
    """Max pooling to a fixed (D, H, W)."""
    fn = staticmethod(P.adaptive_max_pool3d)


class _MaxUnpool(Module):
    fn = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return type(self).fn(input, indices, self.kernel_size, self.stride, self.padding,
                             output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    """The inverse of MaxPool1d: values back at their indices, zeros elsewhere."""
    fn = staticmethod(P.max_unpool1d)


class MaxUnpool2d(_MaxUnpool):
    """The inverse of MaxPool2d: values back at their indices, zeros elsewhere."""
    fn = staticmethod(P.max_unpool2d)


class MaxUnpool3d(_MaxUnpool):
    """The inverse of MaxPool3d: values back at their indices, zeros elsewhere."""
    fn = staticmethod(P.max_unpool3d)
