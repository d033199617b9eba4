"""`dj.cuda`: PyTorch's CUDA queries, answered for a build without a GPU backend."""

from __future__ import annotations

from .errors import DeviceError


def is_available() -> bool:
    """False: dongjing has no CUDA backend yet."""
    return False


def device_count() -> int:
    """0: no CUDA devices are usable."""
    return 0


def manual_seed(seed: int) -> None:
    """No CUDA generator to seed (a no-op, as in PyTorch without a GPU)."""


def manual_seed_all(seed: int) -> None:
    """No CUDA generators to seed (a no-op, as in PyTorch without a GPU)."""


def current_device() -> int:
    """Raises: there is no current CUDA device."""
    raise DeviceError("dj.cuda.current_device(): dongjing has no CUDA backend yet")


def synchronize() -> None:
    """Raises: there is no CUDA device to synchronize with."""
    raise DeviceError("dj.cuda.synchronize(): dongjing has no CUDA backend yet")
