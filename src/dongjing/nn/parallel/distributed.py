"""DistributedDataParallel: one model replica per rank, gradients averaged over ranks by
bucketed, non-blocking all-reduces that start while backward is still running."""

from __future__ import annotations

import contextlib
import warnings

from ...autograd.api import queue_callback
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...distributed import collectives
from ...distributed.buckets import plan_buckets
from ...distributed.gradients import all_reduce_gradients
from ...distributed.world import ensure_init
from ...tensor import grad_scope
from ..module import Module
from .reducer import Reducer


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
        object.__setattr__(self, "_reducer", _reducer(self._ddp_params, self._buckets))
        self._sync = True
        self._traced_with_sync = False
        self._expecting = False  # a synchronizing forward ran; its backward reduces
        for index, p in enumerate(self._ddp_params):
            p.register_hook(self._make_hook(index))

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
    def _make_hook(self, index: int):
        def hook(grad):
            reducer = self._reducer
            if not self._expecting or reducer is None:
                return None
            if not reducer.active:
                reducer.begin()
                queue_callback(self._finish)
            p = self._ddp_params[index]
            reducer.fill(index, grad._data, None if p._grad is None else p._grad._data)
            p._grad = None  # the reduced value replaces it when backward finishes
            return None

        return hook

    def _finish(self) -> None:
        self._expecting = False
        if self._reducer.active:
            self._reducer.finish()

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


def _reducer(params: list, buckets: list) -> Reducer | None:
    """The eager reducer on a communicator of its own (None with world size 1: nothing to do).

    Its own communicator, because its helper thread starts collectives while the main thread
    may start others (SyncBatchNorm's, in the same backward): on one communicator their order
    could differ between ranks. The helper thread needs MPI_THREAD_MULTIPLE (mpi4py's
    default); under a lower thread level the hooks start and poll the reductions themselves.
    """
    world = ensure_init()
    if world.size == 1:
        return None
    mpi = world.mpi
    use_thread = mpi.Query_thread() == mpi.THREAD_MULTIPLE
    return Reducer(params, buckets, world.comm.Dup(), mpi, world.size, use_thread)
