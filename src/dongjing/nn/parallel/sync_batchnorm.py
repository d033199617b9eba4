"""SyncBatchNorm: batch normalization with statistics over the whole global batch (all ranks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import ops
from ...distributed.functional import all_reduce
from ...errors import ShapeError
from ...tensor import Tensor
from ..module import Module
from ..normalization import _BatchNorm
from ..updates import update_buffer

if TYPE_CHECKING:
    from ...types import DeviceLike, DTypeLike


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over (N, C, ...) inputs whose mean and variance in training are those of the
    batches of all ranks together (two differentiable all-reduces), so N per rank can be small.
    Eval mode uses the running statistics, as BatchNorm does. With one rank it equals BatchNorm.
    """

    _ndims = (2, 3, 4, 5)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device: DeviceLike | None = None, dtype: DTypeLike | None = None,
                 bias: bool = True):
        if process_group is not None:
            raise NotImplementedError("SyncBatchNorm: process_group other than the default "
                                      "(every rank) is not supported")
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in self._ndims or (x.shape[1] is not None
                                         and x.shape[1] != self.num_features):
            raise ShapeError(f"SyncBatchNorm({self.num_features}): expects an (N, C, ...) input "
                             f"with {self.num_features} channels in dim 1, got shape {x.shape}")
        if not self.training and self.track_running_stats:
            return super().forward(x)
        dims = (0,) + tuple(range(2, x.ndim))
        n = all_reduce(ops.count(x, dims, x.dtype), "sum")
        mean = all_reduce(ops.sum(x, dims, keepdim=True), "sum") / n
        centered = x - mean
        var = all_reduce(ops.sum(centered * centered, dims, keepdim=True), "sum") / n
        if self.track_running_stats:
            self._update_global(mean.detach(), var.detach(), n.detach())
        shape = (1, -1) + (1,) * (x.ndim - 2)
        out = centered / ops.sqrt(var + self.eps)
        if self.weight is not None:
            out = out * ops.reshape(self.weight, shape)
        if self.bias is not None:
            out = out + ops.reshape(self.bias, shape)
        return out

    def _update_global(self, mean: Tensor, var: Tensor, n: Tensor) -> None:
        m, shape = self.momentum, (self.num_features,)
        unbiased = var * n / ops.maximum(n - 1.0, 1.0)
        update_buffer(self.running_mean,
                      self.running_mean * (1.0 - m) + ops.reshape(mean, shape) * m)
        update_buffer(self.running_var,
                      self.running_var * (1.0 - m) + ops.reshape(unbiased, shape) * m)
        update_buffer(self.num_batches_tracked, self.num_batches_tracked + 1)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module) -> Module:
        """`module` with every BatchNorm1d/2d replaced by a SyncBatchNorm that holds the same
        parameter and buffer objects (an optimizer built before keeps working)."""
        if isinstance(module, _BatchNorm) and not isinstance(module, cls):
            sync = cls(module.num_features, module.eps, module.momentum, module.affine,
                       module.track_running_stats)
            for name, param in module._parameters.items():
                sync.register_parameter(name, param)
            for name, buffer in module._buffers.items():
                sync.register_buffer(name, buffer)
            sync.train(module.training)
            return sync
        for name, child in list(module.named_children()):
            module.add_module(name, cls.convert_sync_batchnorm(child))
        return module
