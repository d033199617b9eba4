"""Group and instance normalization (`F.group_norm`, `F.instance_norm`, `nn.GroupNorm`,
`nn.InstanceNorm1d/2d/3d`), composed of dongjing ops."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import ops
from ..autocasting import autocast_policy
from ..core.validation import check_int
from ..errors import ShapeError
from ..ops.convert import as_tensor
from ..tensor import Tensor
from .factory import affine_parameters, init_channel_norm, place_new
from .module import Module
from .updates import update_buffer

if TYPE_CHECKING:
    from ..types import DeviceLike, DTypeLike


def _affine(out: Tensor, weight, bias) -> Tensor:
    shape = (1, -1) + (1,) * (out.ndim - 2)
    if weight is not None:
        out = out * ops.reshape(weight, shape)
    if bias is not None:
        out = out + ops.reshape(bias, shape)
    return out


@autocast_policy("group_norm")
def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize (N, C, *) over each group of C / num_groups channels (and the other dims)."""
    x = as_tensor(input)
    if x.ndim < 2 or x.shape[1] is None or x.shape[1] % num_groups:
        raise ShapeError(f"group_norm: expects (N, C, *) with C divisible by num_groups "
                         f"{num_groups}, got shape {x.shape}")
    grouped = ops.reshape(x, (x.shape[0] if x.shape[0] is not None else -1, num_groups, -1))
    mean = ops.mean(grouped, 2, keepdim=True)
    centered = grouped - mean
    var = ops.mean(centered * centered, 2, keepdim=True)
    out = ops.reshape_like(centered / ops.sqrt(var + eps), x)
    return _affine(out, weight, bias)


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each (sample, channel) of (N, C, *) over its own spatial dims; with running
    statistics and `use_input_stats=False`, by those instead. When `use_input_stats` and running
    buffers are given, they are updated (as PyTorch's function does)."""
    x = as_tensor(input)
    if x.ndim < 3:
        raise ShapeError(f"instance_norm: expects (N, C, *spatial), got shape {x.shape}")
    dims = tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if use_input_stats:
        mean = ops.mean(x, dims, keepdim=True)
        centered = x - mean
        var = ops.mean(centered * centered, dims, keepdim=True)
        if running_mean is not None and running_var is not None:
            _update_running(x.detach(), mean.detach(), var.detach(), running_mean, running_var,
                            momentum)
        out = centered / ops.sqrt(var + eps)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: use_input_stats=False needs running_mean and "
                             "running_var")
        out = (x - ops.reshape(running_mean, shape)) / ops.sqrt(
            ops.reshape(running_var, shape) + eps)
    return _affine(out, weight, bias)


def _update_running(x, mean, var, running_mean, running_var, momentum: float) -> None:
    """running <- (1 - momentum) * running + momentum * (the batch's mean over instances of
    each channel's statistics, the variance unbiased)."""
    n = float(np.prod(x.shape[2:]))
    unbiased = var * (n / max(n - 1.0, 1.0))
    channels = running_mean.shape
    batch_mean = ops.reshape(ops.mean(ops.flatten(mean, 2), (0, 2)), channels)
    batch_var = ops.reshape(ops.mean(ops.flatten(unbiased, 2), (0, 2)), channels)
    update_buffer(running_mean, running_mean * (1.0 - momentum) + batch_mean * momentum)
    update_buffer(running_var, running_var * (1.0 - momentum) + batch_var * momentum)


class GroupNorm(Module):
    """`group_norm` with a learnable per-channel weight (1s) and bias (0s)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None, bias: bool = True):
        super().__init__()
        self.num_groups = check_int("nn.GroupNorm", "num_groups", num_groups, 1)
        self.num_channels = check_int("nn.GroupNorm", "num_channels", num_channels, 1)
        if num_channels % num_groups:
            raise ValueError(f"nn.GroupNorm: num_channels {num_channels} must be divisible by "
                             f"num_groups {num_groups}")
        self.eps, self.affine = eps, affine
        affine_parameters(self, num_channels, affine, bias)
        place_new(self, device, dtype)

    def forward(self, x: Tensor) -> Tensor:
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class _InstanceNorm(Module):
    _dims = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False,
                 device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None, bias: bool = True):
        super().__init__()
        self.num_features = check_int(type(self).__name__, "num_features", num_features, 1)
        init_channel_norm(self, num_features, eps, momentum, affine, track_running_stats,
                          device, dtype, bias)

    def forward(self, x: Tensor) -> Tensor:
        x = as_tensor(x)
        if x.ndim not in (self._dims + 1, self._dims + 2):
            raise ShapeError(f"nn.{type(self).__name__}: expects a {self._dims + 1}-d or "
                             f"{self._dims + 2}-d input, got shape {x.shape}")
        unbatched = x.ndim == self._dims + 1
        if unbatched:
            x = ops.unsqueeze(x, 0)
        use_input_stats = self.training or not self.track_running_stats
        out = instance_norm(x, self.running_mean if self.training else None,
                            self.running_var if self.training else None, self.weight,
                            self.bias, True, self.momentum, self.eps) if use_input_stats \
            else instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                               False, self.momentum, self.eps)
        if use_input_stats and self.training and self.track_running_stats:
            update_buffer(self.num_batches_tracked, self.num_batches_tracked + 1)
        return ops.squeeze(out, 0) if unbatched else out

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of (N, C, L) or (C, L) inputs."""

    _dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of (N, C, H, W) or (C, H, W) inputs."""

    _dims = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of (N, C, D, H, W) or (C, D, H, W) inputs."""

    _dims = 3
