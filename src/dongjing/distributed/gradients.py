"""All-reduce of a list of gradients with the `all_reduce` op, bucketed: the data-parallel step
of static graphs (`optimizer.minimize(loss, distributed=True)`) and of dj.jit traces."""

from __future__ import annotations

from .. import ops
from .buckets import plan_buckets
from .functional import all_reduce


def all_reduce_gradients(grads: list, bucket_cap_mb: float = 25.0, average: bool = True) -> list:
    """`grads` summed (or averaged) over all ranks, None entries kept as None.

    Each bucket is one flat `all_reduce` of the gradients' concatenation, sliced back into
    their shapes. Works on symbolic gradients (graph nodes) and eager ones; every rank must
    pass gradients of the same shapes in the same order.
    """
    present = [i for i, g in enumerate(grads) if g is not None]
    buckets = plan_buckets([(grads[i].shape, grads[i].dtype) for i in present], bucket_cap_mb)
    result = list(grads)
    op = "mean" if average else "sum"
    for bucket in buckets:
        members = [present[k] for k in bucket.indices]
        flat = ops.concat([ops.reshape(grads[i], (-1,)) for i in members], 0)
        reduced = all_reduce(flat, op)
        for i, start, size in zip(members, bucket.offsets, bucket.sizes):
            result[i] = ops.reshape(reduced[start:start + size], grads[i].shape)
    return result
