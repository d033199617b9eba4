"""`dj.amp` (PyTorch's `torch.amp`): loss scaling with `GradScaler`."""

import sys

from ..devices import cuda as _cuda
from .grad_scaler import GradScaler

__all__ = ["GradScaler"]

_cuda.amp = sys.modules[__name__]  # torch.cuda.amp.GradScaler: dj.cuda sits below this package
