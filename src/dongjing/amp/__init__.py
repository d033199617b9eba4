"""`dj.amp` (PyTorch's `torch.amp`): mixed precision with `autocast` regions and loss scaling
with `GradScaler`."""

import sys

from ..devices import cuda as _cuda
from . import cuda_amp as _cuda_amp
from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "get_autocast_dtype", "is_autocast_enabled"]

_cuda.amp = sys.modules[_cuda_amp.__name__]  # torch.cuda.amp: dj.cuda sits below this package
