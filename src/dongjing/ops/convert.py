"""Turning operands into Tensors: Python scalars (weakly typed, like PyTorch), arrays, lists."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..backends import backend_of, default_backend
from ..core.registry import OPS
from ..tensor import Tensor
from ..tensor.conversion import to_array

_make = Tensor._make
_NUMBERS = (bool, int, float)


def as_tensor(value, like: Tensor | None = None) -> Tensor:
    """`value` as a Tensor; a Python scalar takes the dtype of `like` where PyTorch would."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, int, float)):
        dtype = dtypes.scalar_dtype(value, None if like is None else like.dtype)
        data = None if like is None else like._data
        backend = default_backend() if data is None else backend_of(data)
        return _make(backend.asarray(value, dtype))
    return _make(to_array(value))


def _operand_scalar(value, like: Tensor) -> Tensor:
    """A Python number beside `like` as a binary op's operand: on a device, the backend's
    cached copy of it (a per-op host-to-device copy cost an eager GPU step more than its
    kernels); the op reads it and makes a new array, so sharing it is safe."""
    data = like._data
    if data is not None and type(data) is not np.ndarray:
        backend = backend_of(data)
        if backend.device_type != "cpu":
            dtype = dtypes.scalar_dtype(value, like.dtype)
            return _make(backend.scalar(np.asarray(value, dtype)))
    return as_tensor(value, like)


def pair(a, b) -> tuple[Tensor, Tensor]:
    """Two operands of a binary op as Tensors of one dtype (a cast is inserted if needed)."""
    if type(a) is Tensor and type(b) is Tensor:  # the per-op fast path: two eager tensors
        da, db = a._data, b._data
        if da is not None and db is not None and da.dtype is db.dtype:
            return a, b
    if isinstance(a, Tensor):
        if not isinstance(b, Tensor):
            b = _operand_scalar(b, a) if type(b) in _NUMBERS else as_tensor(b, a)
    elif isinstance(b, Tensor):
        a = _operand_scalar(a, b) if type(a) in _NUMBERS else as_tensor(a, b)
    else:
        a = as_tensor(a)
        b = as_tensor(b, a)
    da, db = a.dtype, b.dtype
    if da is not db and da != db:
        cast = OPS["cast"].binding  # declared by ops.elementwise, which is built on this module
        dtype = dtypes.promote_operands(da, a.ndim, db, b.ndim)
        if da != dtype:
            a = cast(a, dtype)
        if db != dtype:
            b = cast(b, dtype)
    return a, b
