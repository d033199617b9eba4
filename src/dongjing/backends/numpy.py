"""The NumPy backend (the default) and the opt-in glibc allocator policy.

Eager results reuse their buffers without any setting (`buffer_pool`, `dj.memory_stats()`).
`keep_freed_memory()` retunes the whole process's allocator, so it is only ever the program's
own call; the environment variable ``DONGJING_KEEP_FREED_MEMORY`` that once applied it at import
is ignored now (a documented no-op).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

import numpy

from .base import Backend, register

__all__ = ["numpy_backend", "keep_freed_memory", "release_memory"]

numpy_backend = register(
    Backend(
        name="numpy",
        xp=numpy,
        array_types=(numpy.ndarray, numpy.generic),
        rng_factory=numpy.random.default_rng,
        random_types=(numpy.random.RandomState, numpy.random.Generator),
    ),
    default=True,
)

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "mallopt") else None
    except OSError:
        return None


_LIBC = _libc()


def keep_freed_memory(enabled: bool = True) -> bool:
    """Let glibc keep freed array memory for reuse instead of returning it to the OS.

    Eager ops allocate a fresh result per call; for arrays of megabytes glibc would otherwise
    unmap each freed block and fault the next one back in page by page, which costs more than
    the arithmetic. dongjing's own eager results need none of this (they are reused from
    `buffer_pool`); this helps other large temporaries of the program. Blocks up to 32 MiB
    come from the heap and freed ones are reused; `release_memory()` gives the unused part
    back. This retunes the allocator of the whole process, so dongjing never does it on its
    own. Returns False where the C library offers no such control.
    """
    if _LIBC is None:
        return False
    if enabled:
        ok = _LIBC.mallopt(_M_MMAP_THRESHOLD, 32 * 1024 * 1024)
        ok &= _LIBC.mallopt(_M_TRIM_THRESHOLD, 1 << 30)
    else:  # glibc's defaults
        ok = _LIBC.mallopt(_M_MMAP_THRESHOLD, 128 * 1024)
        ok &= _LIBC.mallopt(_M_TRIM_THRESHOLD, 128 * 1024)
    return bool(ok)


def release_memory() -> None:
    """Return the heap's free memory to the operating system (glibc `malloc_trim`)."""
    if _LIBC is not None and hasattr(_LIBC, "malloc_trim"):
        _LIBC.malloc_trim(0)
