"""Conv2d and the pooling layers."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..core.validation import check_int
from ..devices.device import check_device
from ..errors import ArgumentError
from ..tensor import Tensor
from . import functional as F
from . import init
from .factory import place_new
from .functional import Size
from .module import Module
from .parameter import Parameter

if TYPE_CHECKING:
    from ..types import DeviceLike, DTypeLike


def _pair(v: Size, name: str = "size", minimum: int = 0,
          func: str = "nn.Conv2d") -> tuple[int, int]:
    """An int or a pair of ints as a pair, each checked to be an integer >= `minimum`."""
    pair = tuple(v) if isinstance(v, (tuple, list)) else (v, v)
    if len(pair) != 2:
        raise ArgumentError(f"{func}: argument '{name}' must be an int or a pair, got {v!r}")
    return tuple(check_int(func, name, d, minimum) for d in pair)


class Conv2d(Module):
    """2-d convolution: weight (out_channels, in_channels, kh, kw), bias (out_channels,)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Size, stride: Size = 1,
                 padding: Size = 0, dilation: Size = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        super().__init__()
        if _pair(dilation, "dilation", 1) != (1, 1) or groups != 1 or padding_mode != "zeros":
            raise NotImplementedError("nn.Conv2d: dilation, groups and padding_mode other than "
                                      "the defaults are not supported")
        self.in_channels = check_int("nn.Conv2d", "in_channels", in_channels, minimum=1)
        self.out_channels = check_int("nn.Conv2d", "out_channels", out_channels, minimum=1)
        self.kernel_size = _pair(kernel_size, "kernel_size", 1)
        self.stride, self.padding = _pair(stride, "stride", 1), _pair(padding, "padding", 0)
        self.weight = Parameter(np.empty((out_channels, in_channels) + self.kernel_size,
                                         np.float32))
        if bias:
            self.bias = Parameter(np.empty((out_channels,), np.float32))
        else:
            self.register_parameter("bias", None)
        init.default_(self.weight, self.bias)
        place_new(self, device, dtype)

    def forward(self, x: Tensor) -> Tensor:
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0, 0):
            s += f", padding={self.padding}"
        if self.bias is None:
            s += ", bias=False"
        return s


class _Pool2d(Module):
    def __init__(self, kernel_size: Size, stride: Size | None = None, padding: Size = 0):
        super().__init__()
        self._window(kernel_size, stride, padding)

    def _window(self, kernel_size: Size, stride: Size | None, padding: Size) -> None:
        func = f"nn.{type(self).__name__}"  # checked now, as Conv2d's: not at the first call
        _pair(kernel_size, "kernel_size", 1, func)
        if stride is not None:
            _pair(stride, "stride", 1, func)
        _pair(padding, "padding", 0, func)
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_Pool2d):
    """Largest value of each window (stride defaults to the kernel size); with
    `return_indices`, also each maximum's flat H*W index (as `F.max_pool2d`)."""

    def __init__(self, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
                 dilation: Size = 1, return_indices: bool = False, ceil_mode: bool = False):
        Module.__init__(self)
        _pair(dilation, "dilation", 1, "nn.MaxPool2d")
        self._window(kernel_size, stride, padding)
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(_Pool2d):
    """Mean of each window (stride defaults to the kernel size; the divisor as `F.avg_pool2d`)."""

    def __init__(self, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None):
        Module.__init__(self)
        if ceil_mode:
            raise NotImplementedError("nn.AvgPool2d: ceil_mode=True is not supported")
        self._window(kernel_size, stride, padding)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class Conv1d(Module):
    """1-d convolution: weight (out_channels, in_channels, k), bias (out_channels,)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, dilation: int = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        super().__init__()

        check_device(device, "nn.Conv1d")
        if dilation != 1 or groups != 1 or padding_mode != "zeros":
            raise NotImplementedError("nn.Conv1d: dilation, groups and padding_mode other than "
                                      "the defaults are not supported")
        def single(v, name, minimum):
            return check_int("nn.Conv1d", name, v[0] if isinstance(v, (tuple, list)) else v,
                             minimum)

        self.in_channels = check_int("nn.Conv1d", "in_channels", in_channels, minimum=1)
        self.out_channels = check_int("nn.Conv1d", "out_channels", out_channels, minimum=1)
        self.kernel_size = (single(kernel_size, "kernel_size", 1),)
        self.stride, self.padding = (single(stride, "stride", 1),), (single(padding, "padding", 0),)
        dtype = np.dtype(dtype or np.float32)
        self.weight = Parameter(np.empty((out_channels, in_channels, self.kernel_size[0]), dtype))
        if bias:
            self.bias = Parameter(np.empty((out_channels,), dtype))
        else:
            self.register_parameter("bias", None)
        init.default_(self.weight, self.bias)

    def forward(self, x: Tensor) -> Tensor:
        return F.conv1d(x, self.weight, self.bias, self.stride[0], self.padding[0])

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")


class AdaptiveAvgPool2d(Module):
    """Average pooling to a fixed output size (PyTorch's window boundaries)."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class Upsample(Module):
    """`F.interpolate` as a module."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None):
        super().__init__()
        self.size, self.scale_factor = size, scale_factor
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, x: Tensor) -> Tensor:
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)
