"""A stand-in "cuda" backend for machines without a GPU, built from the wrapped test backend.

Its arrays (`CArray`) are NumPy arrays in a type that NumPy's functions refuse, so any host
computation on them fails loudly; the backend reports the device type "cuda" and exchanges data
with the host only through copies, as CuPy does. `fake_cuda()` registers it for the duration of
a `with` block (other tests must keep seeing a build without CUDA); `no_host(backend)` makes any
device-to-host copy raise, to prove a code path stays on the device.
"""

from __future__ import annotations

import contextlib

import numpy as np
from wrapped_backend import LeakError, WArray, _Namespace, unwrap

from dongjing.backends import Backend, register, unregister
from dongjing.devices import random as dj_random


class CArray(WArray):
    """An array of the fake CUDA device (DLPack reports it as kDLCUDA, device 0)."""

    __slots__ = ()
    refuses_host = True  # its namespace's functions refuse NumPy arrays, as CuPy's do

    def __dlpack__(self, **kwargs):
        return self.a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return (2, 0)


class _FakeCudaBackend(Backend):
    """Host data reaches the device as a copy (CuPy's asarray of a NumPy array is one too)."""

    def asarray(self, value, dtype=None):
        if isinstance(value, CArray):
            return super().asarray(value, dtype)
        if isinstance(value, WArray):
            value = value.a
        return CArray(np.array(value, dtype=dtype, copy=True))


def _to_host(array: CArray) -> np.ndarray:
    return array.a.copy()  # like CuPy's .get(): a copy in host memory


def make_backend() -> Backend:
    """A new fake CUDA backend (not registered)."""
    syncs: list = []
    backend = _FakeCudaBackend(
        name="fake-cuda",
        xp=_Namespace(np, CArray),
        array_types=(CArray,),
        rng_factory=lambda seed: _Namespace(np.random.default_rng(seed), CArray),
        to_numpy_fn=_to_host,
        device_type="cuda",
        sync_fn=syncs.append,
    )
    backend.syncs = syncs
    return backend


@contextlib.contextmanager
def fake_cuda():
    """Register the fake CUDA backend inside the block; forget it afterwards."""
    backend = register(make_backend())
    try:
        yield backend
    finally:
        unregister(backend)
        dj_random.default.devices.pop(backend.name, None)


@contextlib.contextmanager
def no_host(backend: Backend):
    """Inside the block, a device-to-host copy of `backend`'s arrays raises LeakError."""
    def refuse(array):
        raise LeakError("a device array was copied to the host")

    saved = backend.to_numpy_fn
    backend.to_numpy_fn = refuse
    try:
        yield
    finally:
        backend.to_numpy_fn = saved


def host(t) -> np.ndarray:
    """The value of a tensor on any backend, as a NumPy array (test side only)."""
    data = t._data
    return np.array(unwrap(data)) if isinstance(data, WArray) else np.asarray(data)
