"""DataLoader: batches of a dataset, in this process or fetched by worker processes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..devices.random import generator as default_generator
from ..errors import ArgumentError
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from .workers import MultiProcessIterator, WorkerPool

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .dataset import Dataset


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


class DataLoader:
    """Iterate over `dataset` in batches, as PyTorch's `torch.utils.data.DataLoader` does.

    `shuffle=True` draws a new order each epoch from `generator` (a `numpy.random.Generator`;
    by default dongjing's, seeded by `dj.manual_seed`); `sampler` or `batch_sampler` give the
    order instead; `batch_size=None` yields single examples. With `num_workers=N > 0`, N worker
    processes fetch and collate batches (each seeded with a base seed drawn per epoch plus its
    id, `worker_init_fn(worker_id)` run first, `get_worker_info()` telling a dataset which
    worker it is in); `persistent_workers=True` keeps them between epochs; `timeout` bounds the
    wait for one batch. An `IterableDataset` is read as a stream (in each worker, its own copy).
    """

    def __init__(self, dataset: Dataset | Sequence[Any], batch_size: int | None = 1,
                 shuffle: bool | None = None, sampler: Sampler | Iterable[Any] | None = None,
                 batch_sampler: Iterable[list[int]] | None = None, num_workers: int = 0,
                 collate_fn: Callable[[list[Any]], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None,
                 generator: np.random.Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True):
        if not _is_int(num_workers) or num_workers < 0:
            raise ArgumentError(f"DataLoader: num_workers must be an integer >= 0, got "
                                f"{num_workers!r}")
        if not isinstance(timeout, (int, float)) or timeout < 0:
            raise ArgumentError(f"DataLoader: timeout must be a number >= 0, got {timeout!r}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ArgumentError("DataLoader: prefetch_factor needs num_workers > 0")
        if num_workers == 0 and persistent_workers:
            raise ArgumentError("DataLoader: persistent_workers needs num_workers > 0")
        if prefetch_factor is not None and (not _is_int(prefetch_factor) or prefetch_factor < 1):
            raise ArgumentError(f"DataLoader: prefetch_factor must be a positive integer, got "
                                f"{prefetch_factor!r}")
        if batch_size is not None and (not _is_int(batch_size) or batch_size < 1):
            raise ArgumentError(f"DataLoader: batch_size must be a positive integer or None, "
                                f"got {batch_size!r}")
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable and (shuffle or sampler is not None or batch_sampler is not None):
            raise ArgumentError("DataLoader: an IterableDataset gives its own order; shuffle, "
                                "sampler and batch_sampler do not apply to it")
        if sampler is not None and shuffle:
            raise ArgumentError("DataLoader: sampler and shuffle=True exclude each other")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None
                                          or drop_last):
            raise ArgumentError("DataLoader: batch_sampler excludes batch_size, shuffle, "
                                "sampler and drop_last")
        if batch_size is None and drop_last:
            raise ArgumentError("DataLoader: drop_last needs a batch_size")
        self.dataset, self.num_workers = dataset, int(num_workers)
        self.shuffle, self.drop_last, self.generator = bool(shuffle), bool(drop_last), generator
        self.timeout, self.worker_init_fn = float(timeout), worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.prefetch_factor = 2 if prefetch_factor is None else int(prefetch_factor)
        self.persistent_workers, self.in_order = bool(persistent_workers), bool(in_order)
        self.pin_memory = pin_memory  # nothing to pin: arrays already live in host memory
        if batch_sampler is not None:
            self.batch_size, self.drop_last = None, False
        else:
            self.batch_size = None if batch_size is None else int(batch_size)
        if sampler is None and not self._iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        self.sampler = sampler
        if batch_sampler is None and self.batch_size is not None and not self._iterable:
            batch_sampler = BatchSampler(sampler, self.batch_size, self.drop_last)
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn
        self._pool: WorkerPool | None = None

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    def _worker_collate(self) -> Callable:
        """What turns fetched examples (a list, or one without batching) into what the loader
        yields."""
        if self.collate_fn is not None:
            return self.collate_fn
        return default_collate if self._auto_collation else default_convert

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)  # a TypeError where the stream has no length, as in PyTorch
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers == 0:
            return self._single_process()
        # the epoch's order is drawn before the workers' base seed, so that workers change
        # neither the order nor what the generator gives afterwards in this process
        requests = None if self._iterable else iter(list(self._requests()))
        pool = self._pool
        if pool is None or pool.closed:
            base_seed = int((self.generator or default_generator()).integers(0, 2**62))
            pool = WorkerPool(self, base_seed)
            if self.persistent_workers:
                self._pool = pool
        return MultiProcessIterator(self, pool, requests)

    def _requests(self) -> Iterator:
        """What each worker request fetches: a list of indices, or one index."""
        if self.batch_sampler is not None:
            return iter(self.batch_sampler)
        return iter(self.sampler)

    def _single_process(self) -> Iterator:
        collate = self._worker_collate()
        if self._iterable:
            yield from self._stream(collate)
            return
        if self.batch_sampler is None:
            for index in self.sampler:
                yield collate(self.dataset[index])
            return
        stacked = self.collate_fn is None and hasattr(self.dataset, "batch")
        for indices in self.batch_sampler:
            if stacked:  # a dataset that stacks its own rows: one gather instead of a list
                yield self.dataset.batch(np.asarray(indices, dtype=np.int64))
            else:
                yield collate([self.dataset[i] for i in indices])

    def _stream(self, collate: Callable) -> Iterator:
        if self.batch_size is None:
            for example in self.dataset:
                yield collate(example)
            return
        examples: list = []
        for example in self.dataset:
            examples.append(example)
            if len(examples) == self.batch_size:
                yield collate(examples)
                examples = []
        if examples and not self.drop_last:
            yield collate(examples)

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown()
