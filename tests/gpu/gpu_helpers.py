"""Helpers of the GPU tests (tests/gpu)."""

from __future__ import annotations

import numpy as np


def on_gpu(t) -> bool:
    """Whether tensor `t` holds a CuPy array on a CUDA device."""
    return type(t._data).__module__.partition(".")[0] == "cupy" and t.device.type == "cuda"


def host(t) -> np.ndarray:
    """A host copy of tensor `t`'s value, from any device."""
    return t.cpu().numpy()
