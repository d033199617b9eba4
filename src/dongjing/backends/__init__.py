"""Array backends: the one seam between dongjing and the array library that holds tensor data.

A `Backend` names an array namespace (``xp``, NumPy-compatible), the array type(s) it owns and
the few services the framework needs beyond the namespace (creation, conversion, random numbers,
scatter-add). Every tensor's backend follows from its data's type: `backend_of`.
NumPy is the default (`numpy_backend`); another library (CuPy) registers a `Backend` of its own
with `register` and ops run on it through `op.forward_for(backend.xp)`. The CuPy backend
(`dongjing.backends.cupy`) registers itself the first time "cuda" is asked for, when CuPy
imports and sees a GPU.
"""

from __future__ import annotations

from . import (  # PyTorch's torch.backends flags
    cuda,
    cudnn,
    cupy,  # noqa: F401  (registers its loader; CuPy is imported on first demand)
    mps,
)
from .base import (
    Backend,
    backend_of,
    default_backend,
    for_device_type,
    is_array,
    random_types,
    register,
    registered,
    unregister,
    write_into,
)
from .numpy import numpy_backend

__all__ = ["Backend", "backend_of", "default_backend", "for_device_type", "is_array",
           "numpy_backend", "random_types", "register", "registered", "unregister", "write_into"]
