"""1-d pooling (`F.avg_pool1d`, `F.max_pool1d`, `nn.AvgPool1d`, `nn.MaxPool1d`): the 2-d
pooling of a height-1 image, so gradients, graphs and jit come from those ops."""

from __future__ import annotations

from .. import ops
from ..errors import ShapeError
from ..ops import unfold2d
from ..ops.convert import as_tensor
from ..tensor import Tensor
from .module import Module
from .pooling_nd import max_pool1d_with_indices


def _one(v, name: str) -> int:
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise ValueError(f"{name}: expects an int or a 1-tuple, got {v!r}")
        v = v[0]
    return int(v)


def _as_image(name: str, x: Tensor) -> Tensor:
    if x.ndim not in (2, 3):
        raise ShapeError(f"{name}: expects an (N, C, L) or (C, L) input, got shape {x.shape}")
    return ops.unsqueeze(x if x.ndim == 3 else ops.unsqueeze(x, 0), 2)


def _back(x: Tensor, out: Tensor) -> Tensor:
    out = ops.squeeze(out, 2)
    return out if x.ndim == 3 else ops.squeeze(out, 0)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Mean of each window of an (N, C, L) input, zero padding counted (stride defaults to
    the kernel size)."""
    x = as_tensor(input)
    if ceil_mode or not count_include_pad:
        raise NotImplementedError("avg_pool1d: ceil_mode=True and count_include_pad=False are "
                                  "not supported")
    k = _one(kernel_size, "avg_pool1d")
    s = k if stride is None else _one(stride, "avg_pool1d")
    p = _one(padding, "avg_pool1d")
    if p > k // 2:
        raise ValueError(f"avg_pool1d: padding {p} must be at most half the kernel size {k}")
    windows = unfold2d(_as_image("avg_pool1d", x), (1, k), (1, s), (0, p))
    return _back(x, ops.mean(windows, dim=(2, 3)))


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False) -> Tensor:
    """Largest value of each window of an (N, C, L) input (stride defaults to the kernel
    size); a `dilation`, `ceil_mode` or `return_indices` other than the default goes through
    the n-d pooling of `max_pool1d_with_indices`."""
    x = as_tensor(input)
    if _one(dilation, "max_pool1d") != 1 or ceil_mode or return_indices:  # the n-d pooling
        y, indices = max_pool1d_with_indices(x, kernel_size, stride, padding, dilation,
                                             ceil_mode)
        return (y, indices) if return_indices else y
    k = _one(kernel_size, "max_pool1d")
    s = k if stride is None else _one(stride, "max_pool1d")
    p = _one(padding, "max_pool1d")
    if p > k // 2:
        raise ValueError(f"max_pool1d: padding {p} must be at most half the kernel size {k}")
    out = ops.pooling.max_pool2d(_as_image("max_pool1d", x), (1, k), (1, s), (0, p))
    return _back(x, out)


class AvgPool1d(Module):
    """`avg_pool1d` as a layer."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, x: Tensor) -> Tensor:
        return avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad)


class MaxPool1d(Module):
    """`max_pool1d` as a layer."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        return max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                          self.ceil_mode, self.return_indices)
