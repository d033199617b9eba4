"""`dj.cuda`: PyTorch's CUDA queries and controls, answered by the CuPy backend.

`is_available()` is True only when CuPy imports and sees a GPU (`dongjing.backends.cupy`).
The controls (`synchronize`, `manual_seed`, `current_device`, ...) act on the backend that
serves "cuda"; without one they raise DeviceError (seeding is a no-op, as in PyTorch).
"""

from __future__ import annotations

from ..backends import for_device_type
from ..backends.cupy import load, unavailable_reason
from ..errors import DeviceError
from .device import device as _device
from .random import seed_backend


def _backend():
    return for_device_type("cuda")


def _require(what: str):
    backend = _backend()
    if backend is None:
        raise DeviceError(f"dj.cuda.{what}: dongjing has no CUDA backend here "
                          f"({unavailable_reason()})")
    return backend


def _index(device) -> int | None:
    if device is None or isinstance(device, int):
        return device

    return _device(device).index


def is_available() -> bool:
    """True when CuPy imports and sees at least one GPU."""
    return load() is not None


def device_count() -> int:
    """How many CUDA devices dongjing can use (0 without a CUDA backend)."""
    backend = _backend()
    return 0 if backend is None else backend.device_count()


def current_device() -> int:
    """The index of the device that "cuda" without an index means."""
    return _require("current_device()").current_index()


def set_device(device) -> None:
    """Make `device` (an index, "cuda:i" or a dj.device) the current CUDA device."""
    backend = _require("set_device()")
    index = _index(device)
    if index is not None and backend.device_fn is not None:
        backend.device_fn(index).use()  # CuPy's Device(i).use()


def synchronize(device=None) -> None:
    """Wait until the work queued on `device` (the current one when None) is done."""
    _require("synchronize()").synchronize(_index(device))


def manual_seed(seed: int) -> None:
    """Seed the CUDA generator (`dj.rand(..., device="cuda")`, ...); a no-op without a CUDA
    backend, as in PyTorch."""
    backend = _backend()
    if backend is not None:
        seed_backend(backend, seed)


def manual_seed_all(seed: int) -> None:
    """Seed the CUDA generator (one generator serves every device here)."""
    manual_seed(seed)
