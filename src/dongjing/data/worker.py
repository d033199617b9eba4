"""What runs inside a DataLoader worker process, and what it tells the main process."""

from __future__ import annotations

import os
import queue
import random
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..devices.random import manual_seed
from .collate import default_collate

# how often a waiting worker checks that the main process is still alive (seconds)
POLL_INTERVAL = 0.5


@dataclass(frozen=True)
class WorkerInfo:
    """What `get_worker_info()` returns inside a worker: its `id` (0-based), the number of
    workers, its `seed`, and its own copy of the `dataset`."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """This worker's `WorkerInfo` inside a DataLoader worker process; None in the main process.

    An `IterableDataset` uses it to give each worker its own share of the stream.
    """
    return _worker_info


@dataclass
class WorkerFailure:
    """An exception raised in a worker, carried to the main process as text and type name."""

    worker_id: int
    type_name: str
    text: str


@dataclass
class IterationEnd:
    """An IterableDataset's iterator ended in this worker."""

    worker_id: int


class _MapFetcher:
    """Examples by index: a list of indices collated into a batch, or one index converted."""

    def __init__(self, dataset, collate: Callable, auto_collation: bool):
        self.dataset, self.collate, self.auto_collation = dataset, collate, auto_collation
        self.stacked = collate is default_collate and hasattr(dataset, "batch")

    def fetch(self, indices):
        if not self.auto_collation:
            return self.collate(self.dataset[indices])
        if self.stacked:  # a dataset that stacks its own rows
            return self.dataset.batch(np.asarray(indices, dtype=np.int64))
        return self.collate([self.dataset[i] for i in indices])


class _IterableFetcher:
    """The next batch (or example) of this worker's copy of an IterableDataset."""

    def __init__(self, dataset, collate: Callable, batch_size: int | None, drop_last: bool):
        self.dataset, self.collate = dataset, collate
        self.batch_size, self.drop_last = batch_size, drop_last
        self.reset()

    def reset(self) -> None:
        self.iterator = iter(self.dataset)

    def fetch(self, _indices):
        if self.batch_size is None:
            return self.collate(next(self.iterator))
        examples = []
        for example in self.iterator:
            examples.append(example)
            if len(examples) == self.batch_size:
                break
        if not examples or (self.drop_last and len(examples) < self.batch_size):
            raise StopIteration
        return self.collate(examples)


def seed_worker(seed: int) -> None:
    """Seed dongjing's, Python's and NumPy's global generators in a worker from its seed
    (base seed + worker id), so that workers never repeat each other's random draws."""
    manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)


def worker_loop(dataset, iterable: bool, index_queue, result_queue, collate: Callable,
                auto_collation: bool, batch_size: int | None, drop_last: bool, seed: int,
                init_fn: Callable[[int], None] | None, worker_id: int, num_workers: int,
                parent_pid: int) -> None:
    """Serve fetch requests `(epoch, send_index, indices)` until told to stop (None).

    Results go back as `(worker_id, epoch, send_index, value)`; `value` is the batch, a
    `WorkerFailure` or an `IterationEnd`. A request `(epoch, "reset", None)` starts an
    IterableDataset's iteration over (a persistent worker's new epoch).
    """
    global _worker_info
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    seed_worker(seed)
    init_failure = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = (_IterableFetcher(dataset, collate, batch_size, drop_last) if iterable
                   else _MapFetcher(dataset, collate, auto_collation))
    except Exception as exc:  # reported with the first request, then the worker stops
        init_failure = WorkerFailure(worker_id, type(exc).__name__, traceback.format_exc())
    ended = False
    while True:
        try:
            request = index_queue.get(timeout=POLL_INTERVAL)
        except queue.Empty:
            if os.getppid() != parent_pid:  # the main process is gone: stop quietly
                return
            continue
        if request is None:
            return
        epoch, send_index, indices = request
        if init_failure is not None:
            result_queue.put((worker_id, epoch, send_index, init_failure))
            return
        if send_index == "reset":
            fetcher.reset()
            ended = False
            continue
        if ended:
            value: Any = IterationEnd(worker_id)
        else:
            try:
                value = fetcher.fetch(indices)
            except StopIteration:
                ended, value = True, IterationEnd(worker_id)
            except Exception as exc:
                value = WorkerFailure(worker_id, type(exc).__name__, traceback.format_exc())
        result_queue.put((worker_id, epoch, send_index, value))
