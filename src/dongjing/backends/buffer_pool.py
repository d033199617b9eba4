"""Reuse of the large NumPy buffers dongjing's eager ops write their results into.

An eager op allocates a fresh result per call. For arrays of hundreds of kilobytes and more,
glibc's malloc serves them with `mmap` (or trims its heap after they are freed), so every step
faults its megabytes back in page by page, which costs more than the arithmetic (W3: 27 ms a
step against 12 ms with freed blocks kept). This pool keeps such buffers for dongjing alone,
without retuning the allocator of the process (the earlier ``DONGJING_KEEP_FREED_MEMORY``).

How a buffer is known to be free: the pool holds each buffer's owning array (its *base*) and
hands out arrays built on it, whose ``.base`` is that owner; every view, slice, ``.numpy()``
result, memoryview or DLPack capsule made from them holds a reference to the owner too. So a
buffer is reused only when the pool's own references are the only ones left (its reference
count): never while a user-visible array still reaches it.

The pool keeps at most `limit` bytes (buffers in use included); a request that would pass it
first drops free buffers, and if that is not enough is served by NumPy unpooled. Only the
elementwise ops' results and the backward engine's gradient sums are taken from it
(`dispatch`, `autograd.engine`), and only from `min_bytes` up: below that malloc's heap reuses
blocks well by itself.
"""

from __future__ import annotations

import sys
import threading

import numpy

from ..errors import DongjingError

__all__ = ["BufferPool", "pool", "memory_stats", "empty_cache", "set_memory_cache_limit"]

_getrefcount = sys.getrefcount
_empty = numpy.empty
_ndarray = numpy.ndarray
_uint8 = numpy.dtype(numpy.uint8)

MIN_BYTES = 128 * 1024  # glibc's initial mmap threshold: smaller blocks are reused by malloc
DEFAULT_LIMIT = 1 << 30  # 1 GiB
MAX_PER_SIZE = 64  # buffers of one size class kept; more are served unpooled (bounded scans)


def _size_class(nbytes: int) -> int:
    """`nbytes` rounded up to one of 8 steps per power of two (at most 12.5% more)."""
    step = 1 << max(12, nbytes.bit_length() - 4)
    return -(-nbytes // step) * step


def _free_count() -> int:
    """The reference count `BufferPool._find` sees for a buffer only the pool holds."""
    bucket = [_empty(16, _uint8)]
    for base in bucket:
        return _getrefcount(base)
    raise AssertionError("unreachable")


class BufferPool:
    """Size-classed buffers reused once nothing outside the pool references them."""

    def __init__(self, limit: int = DEFAULT_LIMIT, min_bytes: int = MIN_BYTES) -> None:
        self.limit = int(limit)
        self.min_bytes = int(min_bytes)
        self._buckets: dict[int, list] = {}
        self._reserved = 0
        self._lock = threading.Lock()
        self._free_refs = _free_count()
        self.hits = self.misses = self.unpooled = self.released = 0
        self.peak_reserved = 0

    def empty(self, shape, dtype) -> numpy.ndarray:
        """An uninitialised array of `shape` and `dtype` (a NumPy dtype), from the pool when it
        is `min_bytes` or larger and fits the limit."""
        nbytes = dtype.itemsize
        for n in shape:
            nbytes *= n
        if nbytes < self.min_bytes:
            return _empty(shape, dtype)
        size = _size_class(nbytes)
        with self._lock:
            base = self._find(size)
        if base is None:
            return _empty(shape, dtype)
        return _ndarray(shape, dtype, buffer=base)

    def _find(self, size: int):
        bucket = self._buckets.get(size)
        if bucket is None:
            bucket = self._buckets[size] = []
        free = self._free_refs
        for base in bucket:
            if _getrefcount(base) == free:
                self.hits += 1
                return base
        if len(bucket) >= MAX_PER_SIZE or (self._reserved + size > self.limit
                                           and not self._make_room(size)):
            self.unpooled += 1
            return None
        base = _empty(size, _uint8)
        bucket.append(base)
        self._reserved += size
        if self._reserved > self.peak_reserved:
            self.peak_reserved = self._reserved
        self.misses += 1
        return base

    def _make_room(self, size: int) -> bool:
        """Drop free buffers (largest size classes first) until `size` more bytes fit."""
        for other in sorted(self._buckets, reverse=True):
            self._drop_free(other, until=self.limit - size)
            if self._reserved + size <= self.limit:
                return True
        return False

    def _drop_free(self, size: int, until: int = -1) -> None:
        bucket = self._buckets[size]
        free = self._free_refs
        kept = []
        for base in bucket:
            if self._reserved > until and _getrefcount(base) == free:
                self._reserved -= size
                self.released += 1
            else:
                kept.append(base)
        bucket[:] = kept

    def empty_cache(self) -> None:
        """Release every buffer not in use (NumPy frees them; those in use stay tracked)."""
        with self._lock:
            for size in list(self._buckets):
                self._drop_free(size)
                if not self._buckets[size]:
                    del self._buckets[size]

    def stats(self) -> dict[str, int]:
        """Counters in the spirit of PyTorch's `torch.cuda.memory_stats()`."""
        with self._lock:
            free_refs = self._free_refs
            in_use = 0
            for size, bucket in self._buckets.items():
                for base in bucket:
                    if _getrefcount(base) != free_refs:
                        in_use += size
            return {
                "reserved_bytes": self._reserved,
                "active_bytes": in_use,
                "inactive_bytes": self._reserved - in_use,
                "peak_reserved_bytes": self.peak_reserved,
                "limit_bytes": self.limit,
                "min_pooled_bytes": self.min_bytes,
                "buffers": sum(len(b) for b in self._buckets.values()),
                "hits": self.hits,
                "misses": self.misses,
                "unpooled": self.unpooled,
                "released": self.released,
            }


pool = BufferPool()


def memory_stats() -> dict[str, int]:
    """The eager buffer pool's counters: bytes reserved (held by the pool), active (reachable
    from an array you or the tape hold), inactive (free for reuse), hits, misses and more."""
    return pool.stats()


def empty_cache() -> None:
    """Return the pool's free buffers to NumPy (as `torch.cuda.empty_cache()`)."""
    pool.empty_cache()


def set_memory_cache_limit(nbytes: int) -> None:
    """Keep at most `nbytes` in the eager buffer pool (0 turns pooling off); default 1 GiB."""
    if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
        raise DongjingError(f"set_memory_cache_limit: expected a byte count >= 0, got {nbytes!r}")
    with pool._lock:
        pool.limit = nbytes
    if pool._reserved > nbytes:
        pool.empty_cache()
