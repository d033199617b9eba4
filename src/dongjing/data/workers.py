"""The main process's side of DataLoader workers: the pool of processes and the iterator that
hands them batches to fetch and returns what they made, in order."""

from __future__ import annotations

import builtins
import itertools
import multiprocessing
import queue
import time
from collections.abc import Iterator
from typing import Any

from ..errors import DataLoaderError
from .worker import POLL_INTERVAL, IterationEnd, WorkerFailure, worker_loop

# how long shutting down waits for a worker to leave on its own before terminating it
JOIN_TIMEOUT = 5.0


class WorkerPool:
    """`num_workers` processes, each with its own request queue, and one shared result queue."""

    def __init__(self, loader, base_seed: int):
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context()
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        self.num_workers = loader.num_workers
        self.iterable = loader._iterable
        self.result_queue = ctx.Queue()
        self.index_queues, self.processes = [], []
        collate = loader._worker_collate()
        batch_size = loader.batch_size if loader._auto_collation else None
        for worker_id in range(self.num_workers):
            index_queue = ctx.Queue()
            process = ctx.Process(
                target=worker_loop, daemon=True, name=f"dongjing DataLoader worker {worker_id}",
                args=(loader.dataset, self.iterable, index_queue, self.result_queue, collate,
                      loader._auto_collation, batch_size, loader.drop_last, base_seed + worker_id,
                      loader.worker_init_fn, worker_id, self.num_workers,
                      multiprocessing.current_process().pid or 0))
            process.start()
            self.index_queues.append(index_queue)
            self.processes.append(process)
        self.epoch = 0
        self.closed = False

    def request(self, worker_id: int, epoch: int, send_index: Any, indices: Any) -> None:
        self.index_queues[worker_id].put((epoch, send_index, indices))

    def dead_workers(self) -> list[tuple[int, int | None]]:
        """(worker id, exit code) of each worker that is no longer running."""
        return [(i, p.exitcode) for i, p in enumerate(self.processes) if not p.is_alive()]

    def shutdown(self, grace: float = JOIN_TIMEOUT) -> None:
        """Ask every worker to stop, wait up to `grace` seconds, then end those still running."""
        if self.closed:
            return
        self.closed = True
        for index_queue, process in zip(self.index_queues, self.processes):
            if process.is_alive():
                try:
                    index_queue.put(None)
                except (OSError, ValueError):
                    pass
        deadline = time.monotonic() + grace
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.terminate()
                process.join(1.0)
        for q in (*self.index_queues, self.result_queue):
            q.cancel_join_thread()
            q.close()

    def __del__(self):
        try:
            self.shutdown()
        except Exception:  # interpreter shutdown: nothing left to tidy
            pass


def raise_failure(failure: WorkerFailure) -> None:
    """Raise a worker's exception again in the main process, as PyTorch does: the same
    built-in type where it takes one message, with the worker's traceback in the message."""
    message = (f"Caught {failure.type_name} in DataLoader worker process {failure.worker_id}.\n"
               f"Original {failure.text}")
    kind = getattr(builtins, failure.type_name, None)
    if isinstance(kind, type) and issubclass(kind, Exception) and kind not in (KeyError,):
        try:
            error = kind(message)
        except Exception:
            error = None
        if error is not None:
            raise error
    raise DataLoaderError(message)


class MultiProcessIterator(Iterator):
    """One epoch over a loader's batches, fetched by the pool's workers.

    Requests go to the workers in turn, `prefetch_factor` per worker ahead of what has been
    consumed; results come back in request order (or as they arrive, with `in_order=False`).
    """

    def __init__(self, loader, pool: WorkerPool, batches: Iterator | None):
        self.loader, self.pool, self.batches = loader, pool, batches
        pool.epoch += 1
        self.epoch = pool.epoch
        if pool.iterable and self.epoch > 1:  # a persistent worker starts its stream over
            for worker_id in range(pool.num_workers):
                pool.request(worker_id, self.epoch, "reset", None)
        self.active = list(range(pool.num_workers))
        self.turn = itertools.cycle(range(pool.num_workers))
        self.sent = self.received = 0
        self.outstanding: dict[int, int] = {}  # request index -> worker id
        self.arrived: dict[int, Any] = {}
        self.finished = False
        for _ in range(loader.prefetch_factor * pool.num_workers):
            if not self._send():
                break

    def _send(self) -> bool:
        if self.pool.iterable:
            if not self.active:
                return False
            worker_id = self.active[self.sent % len(self.active)]
            indices = None
        else:
            indices = next(self.batches, None)
            if indices is None:
                return False
            worker_id = next(self.turn)
        self.pool.request(worker_id, self.epoch, self.sent, indices)
        self.outstanding[self.sent] = worker_id
        self.sent += 1
        return True

    def _receive(self) -> tuple[int, Any]:
        """The next result of this epoch from any worker, watching for dead workers and the
        loader's `timeout`."""
        timeout = self.loader.timeout
        started = time.monotonic()
        while True:
            wait = POLL_INTERVAL if timeout <= 0 else min(POLL_INTERVAL, timeout)
            try:
                worker_id, epoch, send_index, value = self.pool.result_queue.get(timeout=wait)
            except queue.Empty:
                dead = [(i, code) for i, code in self.pool.dead_workers()
                        if i in self.outstanding.values()]
                if dead:
                    self._close(failed=True)
                    ids = ", ".join(f"{i} (exit code {code})" for i, code in dead)
                    raise DataLoaderError(f"DataLoader worker {ids} exited unexpectedly") from None
                if timeout > 0 and time.monotonic() - started >= timeout:
                    self._close(failed=True)
                    raise DataLoaderError(f"DataLoader timed out after {timeout} s waiting for "
                                          f"a batch from its workers") from None
                continue
            if epoch == self.epoch:  # results of an abandoned earlier epoch are dropped
                return send_index, value

    def __next__(self) -> Any:
        while not self.finished:
            if not self.outstanding:
                self._close()
                break
            if self.loader.in_order:
                index = self.received
                while index not in self.arrived:
                    send_index, value = self._receive()
                    self.arrived[send_index] = value
                value = self.arrived.pop(index)
                self.received += 1
            else:
                index, value = self._receive()
            worker_id = self.outstanding.pop(index)
            if isinstance(value, WorkerFailure):
                self._close(failed=True)
                raise_failure(value)
            if isinstance(value, IterationEnd):
                if worker_id in self.active:
                    self.active.remove(worker_id)
                continue
            self._send()
            return value
        raise StopIteration

    def _close(self, failed: bool = False) -> None:
        """End the epoch; the workers stop unless persistent (at once after a failure)."""
        if self.finished:
            return
        self.finished = True
        if failed:
            self.pool.shutdown(grace=0.0)
        elif not self.loader.persistent_workers:
            self.pool.shutdown()

    def __del__(self):
        try:
            self._close()
        except Exception:
            pass
