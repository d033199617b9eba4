"""PyTorch's factory keywords on layers (`nn.Linear(4, 2, device=..., dtype=...)`): the new
layer's parameters and buffers made on that device, the floating ones in that dtype."""

from __future__ import annotations

from ..devices.device import check_device
from .module import Module


def place_new(module: Module, device=None, dtype=None) -> Module:
    """Move a freshly built `module` to `device` and cast it to `dtype` (both optional)."""
    name = f"nn.{type(module).__name__}"
    where = None if device is None else check_device(device, name, placed=True)
    if where is not None and where.type != "cpu":
        module.to(where)
    if dtype is not None:
        module.to(dtype)
    return module
