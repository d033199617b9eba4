"""`dj.cuda.amp` (PyTorch's `torch.cuda.amp`): `autocast` fixed to CUDA tensors, float16 by
default, and `GradScaler`."""

from __future__ import annotations

from . import autocast_mode
from .grad_scaler import GradScaler


class autocast(autocast_mode.autocast):  # noqa: N801 - PyTorch's name
    """`torch.cuda.amp.autocast(enabled=True, dtype=float16)`: `dj.autocast("cuda", ...)`."""

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


__all__ = ["GradScaler", "autocast"]
