"""`dj.amp` (PyTorch's `torch.amp`): loss scaling with `GradScaler`."""

from .grad_scaler import GradScaler

__all__ = ["GradScaler"]
