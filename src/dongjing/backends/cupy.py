"""The CuPy backend: tensors on NVIDIA GPUs (device type "cuda"), loaded on first demand.

Nothing here imports CuPy at dongjing's import: `load()` does, the first time "cuda" is asked
for (`dj.device("cuda")`, `dj.cuda.is_available()`, a CuPy array reaching `backend_of`). When
CuPy is missing, fails to import, or sees no GPU, `load()` returns None and remembers why
(`unavailable_reason()`); "cuda" then raises a clear DeviceError. Install with the optional
extra ``dongjing[gpu]`` (``cupy-cuda12x``).
"""

from __future__ import annotations

from . import cuda_gemm
from .base import Backend, register, register_loader

__all__ = ["load", "unavailable_reason"]

_state: dict = {"tried": False, "backend": None, "reason": "not loaded yet"}


class _Generator:
    """NumPy's Generator methods that dongjing draws with, over `cupy.random.RandomState`
    (whose API CuPy has kept stable); every draw is made on the current GPU."""

    def __init__(self, cupy, seed: int | None):
        self._cp = cupy
        self._rs = cupy.random.RandomState(seed)

    def random(self, size=None, dtype=None):
        return self._rs.random_sample(size, dtype or self._cp.float64)

    def standard_normal(self, size=None, dtype=None):
        return self._rs.standard_normal(size, dtype or self._cp.float64)

    def uniform(self, low=0.0, high=1.0, size=None):
        return self._rs.uniform(low, high, size)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return self._rs.normal(loc, scale, size)

    def integers(self, low, high=None, size=None, dtype=None):
        return self._rs.randint(low, high, size, dtype or self._cp.int64)

    def permutation(self, n):
        return self._rs.permutation(n)

    def choice(self, a, size=None, replace=True, p=None):
        return self._rs.choice(a, size, replace, p)


def _own_matmul(backend: Backend):
    """`backend.forwards["matmul"]`: on first use, cuBLAS through `cuda_gemm` (2-D float
    products; the rest go to `cupy.matmul`), or `cupy.matmul` itself where cuBLAS cannot be
    loaded."""
    def matmul(a, b):
        gemm = cuda_gemm.for_backend(backend) or backend.xp.matmul
        backend.forwards["matmul"] = gemm
        return gemm(a, b)

    return matmul


def _make_backend(cupy) -> Backend:
    import cupyx

    def synchronize(index: int | None) -> None:
        device = cupy.cuda.Device() if index is None else cupy.cuda.Device(index)
        device.synchronize()

    count = cupy.cuda.runtime.getDeviceCount()
    backend = Backend(
        name="cupy",
        xp=cupy,
        array_types=(cupy.ndarray,),
        rng_factory=lambda seed: _Generator(cupy, seed),
        to_numpy_fn=lambda array: array.get(),
        device_type="cuda",
        index_fn=lambda array: array.device.id,
        device_fn=cupy.cuda.Device,
        current_fn=lambda: cupy.cuda.Device().id,
        count_fn=lambda: count,
        sync_fn=synchronize,
        scatter_add_fn=getattr(cupyx, "scatter_add", None),  # else cupy.add.at
        multi_device=count > 1,
        random_types=tuple(getattr(cupy.random, n) for n in ("RandomState", "Generator")
                           if hasattr(cupy.random, n)),
        capturing_fn=lambda: cupy.cuda.get_current_stream().is_capturing(),
    )
    backend.forwards["matmul"] = _own_matmul(backend)
    return backend


def load() -> Backend | None:
    """The CuPy backend, registered on the first call; None when CuPy cannot be used here."""
    if _state["tried"]:
        return _state["backend"]
    _state["tried"] = True
    try:
        import cupy
    except Exception as exc:  # ImportError, or a CUDA library that fails to load
        _state["reason"] = f"CuPy does not import ({type(exc).__name__}: {exc})"
        return None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no driver, no device
        _state["reason"] = f"CuPy sees no GPU ({type(exc).__name__}: {exc})"
        return None
    if count < 1:
        _state["reason"] = "CuPy sees no GPU"
        return None
    _state["backend"] = register(_make_backend(cupy))
    _state["reason"] = None
    return _state["backend"]


def unavailable_reason() -> str | None:
    """Why the CuPy backend is not loaded (None once it is)."""
    load()
    return _state["reason"]


register_loader("cuda", load)  # CuPy itself is imported only then
register_loader("cupy", load)  # a CuPy array met before anything asked for "cuda"
