"""`dj.accelerator` (PyTorch's `torch.accelerator`): the one accelerator dongjing drives is CUDA
through CuPy; without a GPU there is none, and these functions say so."""

from __future__ import annotations

from .devices import cuda
from .devices.device import device


def is_available() -> bool:
    """Whether an accelerator (a CUDA GPU that CuPy sees) is present."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False):
    """`dj.device("cuda")` when a GPU is present, else None (as PyTorch on a CPU-only host)."""
    if not cuda.is_available():
        return None

    return device("cuda")


def device_count() -> int:
    """How many accelerator devices there are (0 without one)."""
    return cuda.device_count() if cuda.is_available() else 0


def current_device_index() -> int:
    """The current accelerator device's index (DeviceError without an accelerator)."""
    return cuda.current_device()


def set_device_index(device) -> None:
    """Make `device` (an index, "cuda:i" or a dj.device) the current accelerator device."""
    cuda.set_device(device)


def synchronize(device=None) -> None:
    """Wait for the accelerator's queued work (nothing to wait for without one)."""
    if cuda.is_available():
        cuda.synchronize(device)
