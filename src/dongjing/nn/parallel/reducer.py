"""The eager half of DistributedDataParallel: gradients into flat buckets as backward produces
them, each bucket all-reduced as soon as it is full, the average back onto `.grad`."""

from __future__ import annotations

import numpy as np

from ...distributed import overlap
from ...distributed.buckets import Bucket
from ...distributed.world import wait
from ...tensor import Tensor


def _transposed(a: np.ndarray) -> bool:
    """Whether `a` is laid out with its axes reversed (a matrix's transpose view, F order)."""
    return a.ndim >= 2 and a.flags.f_contiguous and not a.flags.c_contiguous


def _view(flat: np.ndarray, shape: tuple, transposed: bool) -> np.ndarray:
    """`flat` as an array of `shape`, in C order or with the axes reversed."""
    return flat.reshape(shape[::-1]).T if transposed else flat.reshape(shape)


class _Backward:
    """One backward's buffers: per bucket a fresh flat array, laid out as

    [gradients ... | one "had a gradient" flag per parameter | one "transposed" vote per
    parameter], summed over ranks in one message. Gradients go in already divided by the
    world size (one pass that copies and scales), so the sum is the average.
    """

    def __init__(self, buckets: list[Bucket]):
        self.buffers = [np.empty(b.numel + 2 * len(b.indices), dtype=b.dtype) for b in buckets]
        self.missing = [len(b.indices) for b in buckets]
        self.filled: set[int] = set()  # parameter indices


class Reducer:
    """Reduces the gradients of `params` (in the order backward produces them) over `comm`.

    The layout of each parameter's slot is agreed by all ranks: C order until every rank that
    produced the gradient voted it "transposed" (`w.T` in an elementwise op of the forward
    gives `w` a transposed gradient), then with the axes reversed, so copying into the slot
    is a plain memory copy and `.grad` keeps the layout that one process would give it.
    """

    def __init__(self, params: list, buckets: list[Bucket], comm, mpi, world_size: int,
                 use_thread: bool):
        self.params = params
        self.buckets = buckets
        self.comm, self.mpi = comm, mpi
        self.scale = 1.0 / world_size
        self.use_thread = use_thread
        self.transposed = [False] * len(params)
        self.where: dict[int, tuple[int, int]] = {}
        for b, bucket in enumerate(buckets):
            for k, index in enumerate(bucket.indices):
                self.where[index] = (b, k)
        self.state: _Backward | None = None
        self.job: overlap.Job | None = None

    @property
    def active(self) -> bool:
        """Whether a backward is being reduced (its first gradient has arrived)."""
        return self.state is not None

    def begin(self) -> None:
        """Start one backward's reduction."""
        self.state = _Backward(self.buckets)
        self.job = overlap.Job(self.comm, self.mpi, len(self.buckets))
        if self.use_thread:
            overlap.helper().submit(self.job)

    def _slot(self, buffer: np.ndarray, b: int, k: int) -> np.ndarray:
        """Parameter k of bucket b's slot in `buffer`, shaped and laid out as agreed."""
        bucket = self.buckets[b]
        index, start = bucket.indices[k], bucket.offsets[k]
        flat = buffer[start:start + bucket.sizes[k]]
        return _view(flat, self.params[index].shape, self.transposed[index])

    def fill(self, index: int, grad: np.ndarray | None, old: np.ndarray | None) -> None:
        """Put parameter `index`'s gradient (`grad` plus the `.grad` it had), divided by the
        world size, into its slot; start the bucket's reduction if it is now full."""
        b, k = self.where[index]
        bucket, buffer, n = self.buckets[b], self.state.buffers[b], len(self.buckets[b].indices)
        dst = self._slot(buffer, b, k)
        if grad is None and old is None:
            dst[...] = 0
        elif old is None:
            np.multiply(grad, self.scale, out=dst, casting="unsafe")
        else:
            if grad is None:
                dst[...] = old
            else:
                np.add(old, grad, out=dst, casting="unsafe")
            dst *= self.scale
        buffer[bucket.numel + k] = 0 if grad is None and old is None else 1
        buffer[bucket.numel + n + k] = 1 if grad is not None and _transposed(grad) else 0
        self.state.filled.add(index)
        self.state.missing[b] -= 1
        if self.state.missing[b] == 0:
            self.job.ready(b, buffer)
            if self.use_thread:
                overlap.helper().wake()
            else:  # no helper thread: start in order here, and poll from every hook
                self.job.launch_ready()
        if not self.use_thread:
            self.job.advance()

    def finish(self) -> None:
        """Complete the reduction: every bucket started and waited for, `.grad` set."""
        state, job = self.state, self.job
        try:
            for index, p in enumerate(self.params):  # no gradient this backward: .grad or 0
                if index not in state.filled:
                    self.fill(index, None, None if p._grad is None else p._grad._data)
        finally:
            self.state = self.job = None
            if self.use_thread:
                overlap.helper().retire(job)
        job.launch_ready()
        for request in job.requests:
            wait(request, "DistributedDataParallel backward")
        for b, bucket in enumerate(self.buckets):
            buffer, n = state.buffers[b], len(bucket.indices)
            for k, index in enumerate(bucket.indices):
                had, votes = buffer[bucket.numel + k], buffer[bucket.numel + n + k]
                if had > 0:
                    p = self.params[index]
                    p._grad = Tensor._make(self._slot(buffer, b, k))
                    self.transposed[index] = bool(votes == had) and p.ndim >= 2
