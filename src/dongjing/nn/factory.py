"""PyTorch's factory keywords on layers (`nn.Linear(4, 2, device=..., dtype=...)`): the new
layer's parameters and buffers made on that device, the floating ones in that dtype."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..devices.device import check_device
from .module import Module
from .parameter import Parameter

if TYPE_CHECKING:
    from ..types import DeviceLike, DTypeLike


def place_new(module: Module, device: DeviceLike | None = None,
              dtype: DTypeLike | None = None) -> Module:
    """Move a freshly built `module` to `device` and cast it to `dtype` (both optional)."""
    name = f"nn.{type(module).__name__}"
    where = None if device is None else check_device(device, name, placed=True)
    if where is not None and where.type != "cpu":
        module.to(where)
    if dtype is not None:
        module.to(dtype)
    return module


def affine_parameters(module: Module, channels: int, affine: bool, bias: bool) -> None:
    """A norm's learnable per-channel weight (1s) and bias (0s), each None when not learned."""
    if affine:
        module.weight = Parameter(np.ones(channels, np.float32))
    else:
        module.register_parameter("weight", None)
    if affine and bias:
        module.bias = Parameter(np.zeros(channels, np.float32))
    else:
        module.register_parameter("bias", None)


def init_channel_norm(module: Module, num_features: int, eps: float, momentum: float,
                      affine: bool, track_running_stats: bool, device: DeviceLike | None = None,
                      dtype: DTypeLike | None = None, bias: bool = True) -> None:
    """The state batch and instance norms share: a per-channel weight and bias (or None; no
    bias with `bias=False`) and, when tracked, running mean, variance and batch count, made on
    `device` in `dtype`."""
    module.eps, module.momentum = eps, momentum
    module.affine, module.track_running_stats = affine, track_running_stats
    affine_parameters(module, num_features, affine, bias)
    if track_running_stats:
        module.register_buffer("running_mean", np.zeros(num_features, np.float32))
        module.register_buffer("running_var", np.ones(num_features, np.float32))
        module.register_buffer("num_batches_tracked", np.array(0, np.int64))
    else:
        module.running_mean = module.running_var = None
    place_new(module, device, dtype)
