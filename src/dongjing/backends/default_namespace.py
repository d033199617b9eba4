"""Compatibility name for the default backend: `dongjing.backends` is the seam now.

`xp` is the default backend's array namespace; `keep_freed_memory` / `release_memory` are the
NumPy backend's opt-in allocator policy (`dongjing.backends.numpy`).
"""

from __future__ import annotations

from . import numpy_backend
from .numpy import keep_freed_memory, release_memory

xp = numpy_backend.xp

__all__ = ["xp", "keep_freed_memory", "release_memory"]
