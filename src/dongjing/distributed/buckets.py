"""Gradient buckets: tensors grouped by dtype, in the order given, into size-capped groups that
are all-reduced as one flat message each (few large messages beat many small ones)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Bucket:
    """Which tensors (by index into the planned list) share one flat buffer, and where."""

    dtype: np.dtype
    indices: list[int] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    numel: int = 0

    def add(self, index: int, size: int) -> None:
        self.indices.append(index)
        self.offsets.append(self.numel)
        self.sizes.append(size)
        self.numel += size


def plan_buckets(specs, cap_mb: float) -> list[Bucket]:
    """Buckets for tensors of `specs` [(shape, dtype), ...], filled in the given order (give
    the order gradients become ready: reverse of the forward). A bucket closes once it holds
    `cap_mb` megabytes; a tensor larger than the cap gets a bucket of its own."""
    if cap_mb <= 0:
        raise ValueError(f"bucket_cap_mb must be positive, got {cap_mb}")
    cap = int(cap_mb * 1024 * 1024)
    open_by_dtype: dict = {}
    buckets: list[Bucket] = []
    for index, (shape, dtype) in enumerate(specs):
        dtype = np.dtype(dtype)
        size = int(np.prod(shape, dtype=np.int64))
        bucket = open_by_dtype.get(dtype)
        if bucket is None or (bucket.numel + size) * dtype.itemsize > cap and bucket.indices:
            bucket = Bucket(dtype)
            buckets.append(bucket)
            open_by_dtype[dtype] = bucket
        bucket.add(index, size)
    return buckets
