"""The CuPy backend's loading and plumbing, checked here against a stand-in `cupy` module (the
real one runs in tests/gpu): when it loads, what it answers, and why it does not."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import dongjing as dj
from dongjing.backends import backend_of, unregister
from dongjing.backends import cupy as cupy_backend
from dongjing.errors import DeviceError


class _Device:
    current = 0
    synced: list = []

    def __init__(self, index=None):
        self.id = _Device.current if index is None else index

    def synchronize(self):
        _Device.synced.append(self.id)

    def use(self):
        _Device.current = self.id

    def __enter__(self):
        self._saved, _Device.current = _Device.current, self.id
        return self

    def __exit__(self, *exc):
        _Device.current = self._saved


class _RandomState:
    def __init__(self, seed):
        self.seed, self.calls = seed, []

    def __getattr__(self, name):
        return lambda *args: self.calls.append((name, args)) or name


def _fake_cupy(count):
    cp = types.ModuleType("cupy")

    class ndarray:  # noqa: N801 - CuPy's name
        __module__ = "cupy"

        def __init__(self, data, device=0):
            self.data, self.device = np.asarray(data), types.SimpleNamespace(id=device)

        def get(self):
            return self.data.copy()

    def count_devices():
        if isinstance(count, Exception):
            raise count
        return count

    cp.ndarray = ndarray
    cp.float64, cp.int64 = np.float64, np.int64
    cp.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=count_devices),
                                    Device=_Device)
    cp.random = types.SimpleNamespace(RandomState=_RandomState)
    cupyx = types.ModuleType("cupyx")
    cupyx.scatter_add = lambda *args: None
    return cp, cupyx


@pytest.fixture
def fresh(monkeypatch):
    """A fresh loader state; whatever a test registers is forgotten afterwards."""
    monkeypatch.setitem(cupy_backend._state, "tried", False)
    monkeypatch.setitem(cupy_backend._state, "backend", None)
    monkeypatch.setitem(cupy_backend._state, "reason", "not loaded yet")

    def install(count):
        cp, cupyx = _fake_cupy(count)
        monkeypatch.setitem(sys.modules, "cupy", cp)
        monkeypatch.setitem(sys.modules, "cupyx", cupyx)
        return cp

    yield install
    if cupy_backend._state["backend"] is not None:
        unregister(cupy_backend._state["backend"])


def test_no_cupy_means_no_cuda(fresh, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError
    assert cupy_backend.load() is None and not dj.cuda.is_available()
    assert "CuPy does not import" in cupy_backend.unavailable_reason()
    with pytest.raises(DeviceError, match="CuPy does not import.*dongjing\\[gpu\\]"):
        dj.device("cuda")


@pytest.mark.parametrize("count,reason", [(0, "sees no GPU"),
                                          (RuntimeError("no CUDA driver"), "no CUDA driver")])
def test_no_gpu_means_no_cuda(fresh, count, reason):
    fresh(count)
    assert cupy_backend.load() is None and dj.cuda.device_count() == 0
    assert reason in cupy_backend.unavailable_reason()


def test_a_gpu_registers_the_backend(fresh):
    cp = fresh(2)
    array = cp.ndarray([1.0, 2.0], device=1)
    backend = backend_of(array)  # a CuPy array loads the backend on first sight
    assert backend is cupy_backend.load() and backend.xp is cp
    assert dj.cuda.is_available() and dj.cuda.device_count() == 2 and backend.multi_device
    assert dj.device("cuda:1").index == 1
    with pytest.raises(DeviceError, match="out of range"):
        dj.device("cuda:2")
    assert backend.device_type == "cuda" and backend.index_of(array) == 1
    assert str(dj.Tensor._make(array).device) == "cuda:1"
    assert backend.to_numpy(array).tolist() == [1.0, 2.0]
    assert dj.cuda.current_device() == 0
    dj.cuda.set_device(1)
    assert dj.cuda.current_device() == 1
    dj.cuda.set_device(0)
    _Device.synced.clear()
    dj.cuda.synchronize()
    dj.cuda.synchronize("cuda:1")
    assert _Device.synced == [0, 1]
    with backend.using(1):
        assert backend.current_index() == 1
    rng = backend.generator(7)
    assert rng._rs.seed == 7
    rng.random((2,))
    rng.standard_normal((3,))
    rng.integers(0, 5, size=(4,))
    rng.permutation(6)
    rng.normal(1.0, 2.0, (2,))
    assert [name for name, _ in rng._rs.calls] == ["random_sample", "standard_normal", "randint",
                                                   "permutation", "normal"]
    assert rng._rs.calls[2][1] == (0, 5, (4,), np.int64)
