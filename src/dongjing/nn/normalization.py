"""LayerNorm and BatchNorm1d/2d (running statistics kept as non-trainable Variables)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import ops
from ..core.validation import check_int, check_size
from ..errors import ShapeError
from ..tensor import Tensor
from . import functional as F
from .factory import init_channel_norm, place_new
from .module import Module
from .parameter import Parameter
from .updates import update_buffer

if TYPE_CHECKING:
    from ..types import DeviceLike, DTypeLike


class LayerNorm(Module):
    """Normalize over the trailing `normalized_shape` dims; learnable weight (1s), bias (0s)."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = check_size("nn.LayerNorm", (normalized_shape,))
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, np.float32))
            if bias:
                self.bias = Parameter(np.zeros(self.normalized_shape, np.float32))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        place_new(self, device, dtype)

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class _BatchNorm(Module):
    _ndims: tuple = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None, bias: bool = True):
        super().__init__()
        self.num_features = check_int(type(self).__name__, "num_features", num_features, 0)
        init_channel_norm(self, num_features, eps, momentum, affine, track_running_stats,
                          device, dtype, bias)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in self._ndims or (x.shape[1] is not None
                                         and x.shape[1] != self.num_features):
            raise ShapeError(
                f"{type(self).__name__}({self.num_features}): expects an input of "
                f"{' or '.join(map(str, self._ndims))} dims with {self.num_features} channels "
                f"in dim 1, got shape {x.shape}"
            )
        use_batch = self.training or not self.track_running_stats
        if use_batch and self.track_running_stats:
            self._update_running(x)
        if use_batch:  # the running statistics are updated above (momentum None: averaged)
            return F.batch_norm(x, None, None, self.weight, self.bias, training=True,
                                eps=self.eps)
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=False, eps=self.eps)

    def _update_running(self, x: Tensor) -> None:
        """running <- (1 - momentum) * running + momentum * batch (unbiased variance)."""
        x = x.detach()
        mean, var, dims = F.batch_stats(x)
        n = ops.count(x, dims, x.dtype)
        var = var * n / ops.maximum(n - 1.0, 1.0)
        m = self.momentum
        shape = (self.num_features,)
        update_buffer(self.running_mean,
                      self.running_mean * (1.0 - m) + ops.reshape(mean, shape) * m)
        update_buffer(self.running_var, self.running_var * (1.0 - m) + ops.reshape(var, shape) * m)
        update_buffer(self.num_batches_tracked, self.num_batches_tracked + 1)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) or (N, C, L) inputs over the batch (and length)."""

    _ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W) inputs per channel."""

    _ndims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization of (N, C, D, H, W) inputs per channel."""

    _ndims = (5,)
