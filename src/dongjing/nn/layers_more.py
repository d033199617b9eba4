"""More of PyTorch's layers: `Bilinear`, `RMSNorm`, `LocalResponseNorm`, `CrossMapLRN2d`,
`ChannelShuffle`, `BatchNorm3d`, `Unflatten`, `UpsamplingNearest2d`/`UpsamplingBilinear2d`
and `DataParallel` (one device: it calls the module), with their functions `F.bilinear`,
`F.rms_norm`, `F.local_response_norm` and `F.channel_shuffle`, composed of dongjing ops."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes, ops
from ..core.validation import check_int
from ..errors import ShapeError
from ..ops.convert import as_tensor
from ..tensor import Tensor
from ..tensor.transfer import constant_like
from . import init
from .factory import place_new
from .module import Module
from .parameter import Parameter
from .resample import interpolate, pad

if TYPE_CHECKING:
    from ..types import DeviceLike, DTypeLike

__all__ = ["bilinear", "rms_norm", "local_response_norm", "channel_shuffle"]


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None
             ) -> Tensor:
    """y[..., o] = sum_ij x1[..., i] * weight[o, i, j] * x2[..., j] + bias[o]."""
    x1, x2, w = as_tensor(input1), as_tensor(input2), as_tensor(weight)
    if w.ndim != 3 or x1.shape[-1] != w.shape[1] or x2.shape[-1] != w.shape[2] or \
            x1.shape[:-1] != x2.shape[:-1]:
        raise ShapeError(f"bilinear: inputs of shapes {x1.shape} and {x2.shape} do not fit a "
                         f"weight of shape {w.shape} (out, in1, in2)")
    lead = tuple(x1.shape[:-1])
    flat1 = ops.reshape(x1, (-1, x1.shape[-1]))
    flat2 = ops.reshape(x2, (-1, x2.shape[-1]))
    out = ops.einsum("bi,oij,bj->bo", flat1, w, flat2)
    if lead.count(None) > 1:
        raise ShapeError(f"bilinear: at most one unknown leading dim, got shape {x1.shape}")
    out = ops.reshape(out, tuple(-1 if n is None else n for n in lead) + (w.shape[0],))
    return out if bias is None else out + bias


def _normalized_dims(name: str, x: Tensor, normalized_shape) -> tuple:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
        tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape):]) != shape or len(shape) > x.ndim:
        raise ShapeError(f"{name}: input of shape {x.shape} does not end in the normalized "
                         f"shape {shape}")
    return tuple(range(x.ndim - len(shape), x.ndim))


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over the trailing `normalized_shape` dims, times `weight`;
    eps None means the dtype's machine epsilon."""
    x = as_tensor(input)
    dims = _normalized_dims("rms_norm", x, normalized_shape)
    eps = float(dtypes.finfo(x.dtype).eps) if eps is None else eps
    out = x * ops.rsqrt(ops.mean(x * x, dims, keepdim=True) + eps)
    return out if weight is None else out * weight


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta (channels in dim
    1, the window zero-padded by size // 2 before and (size - 1) // 2 after)."""
    x = as_tensor(input)
    if x.ndim < 3:
        raise ShapeError(f"local_response_norm: expects 3 or more dims, got shape {x.shape}")
    channels = x.shape[1]
    before, after = size // 2, (size - 1) // 2
    padded = pad(x * x, (0, 0) * (x.ndim - 2) + (before, after))
    window = padded[:, 0:channels]
    for shift in range(1, size):
        window = window + padded[:, shift:shift + channels]
    return x / ops.pow(window * (alpha / size) + k, beta)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels (dim 1) of `groups` groups: (N, g, C/g, ...) -> (N, C/g, g, ...)."""
    x = as_tensor(input)
    groups = check_int("channel_shuffle", "groups", groups, minimum=1)
    if x.ndim < 3 or x.shape[1] is None or x.shape[1] % groups:
        raise ShapeError(f"channel_shuffle: expects (N, C, *) with C divisible by groups="
                         f"{groups}, got shape {x.shape}")
    c, rest = x.shape[1], tuple(x.shape[2:])
    if None in rest:
        raise ShapeError(f"channel_shuffle: the dims after the channels must be known, got "
                         f"shape {x.shape}")
    n = -1
    y = ops.reshape(x, (n, groups, c // groups) + rest)
    return ops.reshape(ops.transpose(y, 1, 2), (n, c) + rest)


class Bilinear(Module):
    """y = x1^T A x2 + b with A of shape (out_features, in1_features, in2_features)."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        super().__init__()
        self.in1_features = check_int("nn.Bilinear", "in1_features", in1_features, minimum=1)
        self.in2_features = check_int("nn.Bilinear", "in2_features", in2_features, minimum=1)
        self.out_features = check_int("nn.Bilinear", "out_features", out_features, minimum=1)
        self.weight = Parameter(np.empty((out_features, in1_features, in2_features),
                                         np.float32))
        if bias:
            self.bias = Parameter(np.empty(out_features, np.float32))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()
        place_new(self, device, dtype)

    def reset_parameters(self) -> None:
        """U(-1/sqrt(in1), 1/sqrt(in1)) for weight and bias, as PyTorch's."""
        bound = 1.0 / math.sqrt(self.in1_features)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class RMSNorm(Module):
    """Root-mean-square normalization over the trailing `normalized_shape` dims."""

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
            tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, np.float32))
        else:
            self.register_parameter("weight", None)
        place_new(self, device, dtype)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            self.weight._data[...] = 1.0

    def forward(self, x: Tensor) -> Tensor:
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """`F.local_response_norm` as a module."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size = check_int("nn.LocalResponseNorm", "size", size, minimum=1)
        self.alpha, self.beta, self.k = alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _cross_map_window(size: int, channels: int) -> np.ndarray:
    """(C, C) 0/1: which channels' squares scale channel c in PyTorch's CrossMapLRN2d. Its
    running-window code never drops channel 0 once it entered, so channel 0 is in every
    window; the others are those within size // 2 (rounded as its code does)."""
    reach = int((size - 1) / 2 + 1)
    window = np.zeros((channels, channels))
    for c in range(channels):
        window[c, 0] = 1.0
        window[c, max(1, c - reach + 1):min(c + reach - 1, channels - 1) + 1] = 1.0
    return window


class CrossMapLRN2d(Module):
    """Local response normalization across the channels of (N, C, H, W) inputs, as PyTorch's
    legacy `CrossMapLRN2d` computes it: x * (k + alpha / size * window sum of x^2)^-beta,
    with its window (see `_cross_map_window`; not quite `LocalResponseNorm`'s)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1):
        super().__init__()
        self.size = check_int("nn.CrossMapLRN2d", "size", size, minimum=1)
        self.alpha, self.beta, self.k = alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        x = as_tensor(input)
        if x.ndim != 4 or x.shape[1] is None:
            raise ShapeError(f"CrossMapLRN2d: expects an (N, C, H, W) input with known C, got "
                             f"shape {x.shape}")
        window = constant_like(_cross_map_window(self.size, x.shape[1]).astype(x.dtype), x)
        squares = ops.transpose(x * x, 1, 3)  # channels last: (N, W, H, C)
        sums = ops.transpose(ops.matmul(squares, ops.transpose(window, 0, 1)), 1, 3)
        return x * ops.pow(sums * (self.alpha / self.size) + self.k, -self.beta)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class ChannelShuffle(Module):
    """`F.channel_shuffle` as a module."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = check_int("nn.ChannelShuffle", "groups", groups, minimum=1)

    def forward(self, input: Tensor) -> Tensor:
        return channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class Unflatten(Module):
    """Split dim `dim` into `unflattened_size` (the inverse of Flatten)."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        return ops.unflatten(input, self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class UpsamplingNearest2d(Module):
    """Nearest-neighbour upsampling of (N, C, H, W) inputs."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__()
        self.size, self.scale_factor = size, scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return interpolate(input, self.size, self.scale_factor, "nearest")


class UpsamplingBilinear2d(UpsamplingNearest2d):
    """Bilinear upsampling of (N, C, H, W) inputs with aligned corners."""

    def forward(self, input: Tensor) -> Tensor:
        return interpolate(input, self.size, self.scale_factor, "bilinear",
                             align_corners=True)


class DataParallel(Module):
    """PyTorch's single-process data parallelism. dongjing runs a model on one device per
    process (`dj.distributed` spreads work over processes), so this wrapper calls `module`
    on the whole batch, as PyTorch's does when it finds no second GPU; `module` and the
    state dict keys (`module.` prefix) are PyTorch's."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device, self.dim = output_device, dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
