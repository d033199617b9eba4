"""DistributedDataParallel: one model replica per rank, gradients averaged over ranks by
bucketed, non-blocking all-reduces that start while backward is still running."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

from ...autograd.api import queue_callback
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...distributed import collectives
from ...distributed.buckets import plan_buckets
from ...distributed.gradients import all_reduce_gradients
from ...distributed.world import ensure_init, wait
from ...tensor import Tensor, grad_scope
from ..module import Module


class _BucketState:
    """One backward's view of a bucket: a fresh flat buffer of gradients then one "has a
    gradient" flag per parameter (summed with the gradients, so ranks learn which were used)."""

    def __init__(self, bucket, params):
        self.bucket = bucket
        self.params = [params[i] for i in bucket.indices]
        self.buffer = np.empty(bucket.numel + len(self.params), dtype=bucket.dtype)
        self.filled = [False] * len(self.params)
        self.missing = len(self.params)
        self.request = None
        self.launched = False

    def slot(self, k: int) -> np.ndarray:
        start = self.bucket.offsets[k]
        return self.buffer[start:start + self.bucket.sizes[k]]

    def fill(self, k: int, grad: np.ndarray | None, old: Tensor | None) -> None:
        """Put parameter k's gradient (this backward's `grad` plus what `.grad` held) in place."""
        dst = self.slot(k)
        if grad is None and old is None:
            dst[...] = 0
        elif old is None:
            dst[...] = grad.reshape(-1)
        elif grad is None:
            dst[...] = old._data.reshape(-1)
        else:
            np.add(old._data.reshape(-1), grad.reshape(-1), out=dst)
        self.buffer[self.bucket.numel + k] = 0 if grad is None and old is None else 1
        self.filled[k] = True
        self.missing -= 1

    def launch(self) -> None:
        self.request = collectives.start_all_reduce(self.buffer, "sum")
        self.launched = True


class DistributedDataParallel(Module):
    """Wrap `module` for data-parallel training: each rank runs it on its share of the batch.

    At wrap time rank 0's parameters and buffers are broadcast to every rank. In `backward()`
    each parameter's gradient is copied into its bucket as soon as it is ready; a full bucket
    starts a non-blocking all-reduce (overlapping the rest of backward), and `backward()`
    returns only after every bucket is reduced and each `.grad` holds the average over ranks.
    Parameters a rank did not use count as zero there; ones no rank used keep their `.grad`.
    BatchNorm statistics stay local (see `SyncBatchNorm`). Under `dj.jit` the traced step
    all-reduces its gradients with the graph op `all_reduce`, bucketed the same way.

    >>> model = dj.nn.parallel.DistributedDataParallel(dj.nn.Linear(4, 2))
    >>> model(dj.ones(3, 4)).sum().backward()  # .grad: averaged over ranks
    """

    def __init__(self, module: Module, bucket_cap_mb: float = 25.0,
                 broadcast_buffers: bool = True):
        super().__init__()
        self.module = module
        self.bucket_cap_mb = float(bucket_cap_mb)
        self.world_size = ensure_init().size
        with no_grad():
            collectives.broadcast_parameters(module.parameters(), 0)
            if broadcast_buffers:
                collectives.broadcast_parameters(module.buffers(), 0)
        params = [p for p in module.parameters() if p.requires_grad]
        # gradients become ready roughly in reverse order of the forward: buckets filled in
        # that order are complete (and start reducing) one after another during backward
        object.__setattr__(self, "_ddp_params", params[::-1])
        specs = [(p.shape, p.dtype) for p in self._ddp_params]
        object.__setattr__(self, "_buckets", plan_buckets(specs, self.bucket_cap_mb))
        where = {}
        for b, bucket in enumerate(self._buckets):
            for k, index in enumerate(bucket.indices):
                where[index] = (b, k)
        self._sync = True
        self._traced_with_sync = False
        self._expecting = False  # a synchronizing forward ran; its backward reduces
        self._states: list | None = None
        for index, p in enumerate(self._ddp_params):
            p.register_hook(self._make_hook(*where[index]))

    # --- forward ---------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        out = self.module(*args, **kwargs)
        scope = grad_scope.current
        if scope is not None:  # traced by dj.jit: the gradients become graph nodes
            if self._sync:
                self._traced_with_sync = True
                queue_callback(lambda: self._reduce_traced(scope))
        elif self._sync and is_grad_enabled():
            self._expecting = True
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Inside this block backward() only accumulates `.grad` locally; the first backward
        after it all-reduces the accumulated sum. Under dj.jit a traced step keeps the mode
        it was traced in: trace the accumulating and the synchronizing step as two functions."""
        if self._traced_with_sync:
            warnings.warn("no_sync(): a step that dj.jit traced outside no_sync() keeps "
                          "all-reducing when called inside it; trace the accumulating step as "
                          "a separate function, inside no_sync()", UserWarning, stacklevel=3)
        old = self._sync
        self._sync = False
        try:
            yield
        finally:
            self._sync = old

    # --- eager backward ----------------------------------------------------------------------
    def _make_hook(self, b: int, k: int):
        def hook(grad):
            if not self._expecting:
                return None
            if self._states is None:
                self._states = [_BucketState(bucket, self._ddp_params) for bucket in self._buckets]
                queue_callback(self._finish)
            state = self._states[b]
            p = state.params[k]
            state.fill(k, grad._data, p._grad)
            p._grad = None  # the reduced value replaces it when backward finishes
            if state.missing == 0:
                state.launch()
            self._progress()
            return None

        return hook

    def _progress(self) -> None:
        """Let MPI move launched messages along (it progresses only inside MPI calls)."""
        requests = [s.request for s in self._states if s.request is not None]
        if requests:
            requests[0].Testall(requests)

    def _finish(self) -> None:
        states, self._states, self._expecting = self._states, None, False
        if states is None:
            return
        for state in states:  # parameters with no gradient this backward: their .grad, or 0
            if not state.launched:
                for k, p in enumerate(state.params):
                    if not state.filled[k]:
                        state.fill(k, None, p._grad)
                state.launch()
        for state in states:
            if state.request is not None:
                wait(state.request, "DistributedDataParallel backward")
            numel = state.bucket.numel
            np.divide(state.buffer[:numel], self.world_size, out=state.buffer[:numel])
            for k, p in enumerate(state.params):
                if state.buffer[numel + k] > 0:
                    p._grad = Tensor._make(state.slot(k).reshape(p.shape))

    # --- traced backward (dj.jit) ------------------------------------------------------------
    def _reduce_traced(self, scope) -> None:
        if grad_scope.current is not scope:  # that trace is over
            return
        params = self._ddp_params
        with scope.graph.as_default():
            grads = all_reduce_gradients([p.grad for p in params], self.bucket_cap_mb)
        for p, g in zip(params, grads):
            if g is not None:
                p.grad = g

    def extra_repr(self) -> str:
        return f"world_size={self.world_size}, bucket_cap_mb={self.bucket_cap_mb:g}"
