"""Zero-copy exchange with other array libraries: `dj.from_dlpack` (NumPy arrays, PyTorch
tensors, anything with `__dlpack__`) and the Tensor side of the protocol (`Tensor.__dlpack__`,
`Tensor.__dlpack_device__`, defined in tensor/__init__.py)."""

from __future__ import annotations

import numpy as np

from ..backends import for_device_type
from ..errors import DongjingError, DTypeError
from . import Tensor


class InteropError(DongjingError, ValueError):
    """An object that cannot be shared with dongjing without copying (another device, ...)."""


_KDL_CUDA = (2, 3, 13)  # DLPack's kDLCUDA, kDLCUDAHost, kDLCUDAManaged


def _on_gpu(x) -> bool:
    try:
        return int(x.__dlpack_device__()[0]) in _KDL_CUDA
    except (AttributeError, TypeError, ValueError, IndexError):
        return False


def _from_gpu(x):
    """The array of the CUDA backend sharing memory with the GPU exporter `x`."""
    backend = for_device_type("cuda")
    if backend is None:
        raise InteropError(f"dj.from_dlpack: the {type(x).__name__} lives on a CUDA device and "
                           "dongjing has no CUDA backend here (dj.cuda.is_available() is "
                           "False); move it to the CPU first")
    try:
        return backend.from_dlpack(x)
    except (BufferError, RuntimeError, TypeError, ValueError) as exc:
        raise InteropError(f"dj.from_dlpack: cannot share the memory of a {type(x).__name__} "
                           f"on the GPU ({exc})") from None


def _why_not_shared(x, exc: Exception) -> str:
    """What stands in the way of sharing `x`, in the user's terms where it can be told."""
    if getattr(x, "requires_grad", False) is True:
        return ("it requires grad, and its library exports only tensors without autograd "
                "history: pass x.detach()")
    dtype = str(getattr(x, "dtype", ""))
    if "bfloat16" in dtype or "float8" in dtype:
        return (f"its dtype {dtype} has no NumPy equivalent: convert it first (x.float() in "
                "PyTorch)")
    try:
        device_type = int(x.__dlpack_device__()[0])
    except (AttributeError, TypeError, ValueError, IndexError):
        device_type = None
    if device_type not in (None, 1):  # 1 is DLPack's kDLCPU
        return (f"it lives on DLPack device type {device_type}, not in CPU memory: move it to "
                f"the CPU first ({exc})")
    return str(exc)


def from_dlpack(x) -> Tensor:
    """A tensor sharing memory with `x` (a NumPy array, a PyTorch or JAX array on the CPU or,
    with the CUDA backend, on a GPU, or any object with `__dlpack__`), on `x`'s device:
    writes through either side are seen by the other. No copy is made.

    >>> a = np.zeros(3, np.float32)
    >>> t = dj.from_dlpack(a); a[0] = 5.0; t
    tensor([5., 0., 0.])
    """
    if isinstance(x, Tensor):
        return Tensor._make(x._value("dj.from_dlpack()"))
    if isinstance(x, np.ndarray):
        array = x
    elif hasattr(x, "__dlpack__") and _on_gpu(x):
        array = _from_gpu(x)
    elif hasattr(x, "__dlpack__"):
        try:
            array = np.from_dlpack(x)
        except (BufferError, RuntimeError, TypeError) as exc:
            raise InteropError(f"dj.from_dlpack: cannot share the memory of a "
                               f"{type(x).__name__} with NumPy: {_why_not_shared(x, exc)}"
                               ) from None
    else:
        raise TypeError(f"dj.from_dlpack expects an object with __dlpack__ (a NumPy array, a "
                        f"PyTorch tensor, ...), got {type(x).__name__}")
    if array.dtype.kind not in "biuf":
        raise DTypeError(f"dj.from_dlpack: cannot make a tensor of dtype {array.dtype}")
    return Tensor._make(array)
