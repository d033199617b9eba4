"""DataLoader: batches of a dataset, optionally shuffled by dongjing's seeded generator."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from ..random import generator as default_generator
from ..tensor import Tensor
from .dataset import Dataset


def default_collate(examples: list) -> Tensor | tuple:
    """Stack a list of examples (tuples of tensors / arrays / numbers) field by field."""
    first = examples[0]
    if isinstance(first, (tuple, list)):
        return tuple(default_collate([e[i] for e in examples]) for i in range(len(first)))
    arrays = [e._data if isinstance(e, Tensor) else np.asarray(e) for e in examples]
    return Tensor(np.stack(arrays))


class DataLoader:
    """Iterate over `dataset` in batches of `batch_size`.

    `shuffle=True` draws a new order each epoch from `generator` (a `numpy.random.Generator`;
    by default dongjing's, seeded by `dj.manual_seed`); `drop_last` drops a short final batch.
    `sampler` (an iterable of indices with a length, e.g. `DistributedSampler`) gives the order
    instead of `shuffle`.
    """

    def __init__(self, dataset: Dataset, batch_size: int = 1, shuffle: bool = False,
                 drop_last: bool = False, generator: np.random.Generator | None = None,
                 collate_fn: Callable | None = None, sampler=None, num_workers: int = 0,
                 pin_memory: bool = False):
        # num_workers: batches are made in this process whatever the count (same batches, same
        # order); pin_memory: nothing to pin without a GPU
        if int(num_workers) < 0:
            raise ValueError(f"DataLoader: num_workers must be >= 0, got {num_workers}")
        if batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be at least 1, got {batch_size}")
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler and shuffle=True exclude each other")
        self.dataset, self.batch_size = dataset, int(batch_size)
        self.shuffle, self.drop_last = shuffle, drop_last
        self.generator, self.collate_fn = generator, collate_fn
        self.sampler = sampler

    def __len__(self) -> int:
        n = len(self.dataset) if self.sampler is None else len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self) -> Iterator:
        n = len(self.dataset)
        if self.sampler is not None:
            order = np.fromiter(self.sampler, dtype=np.int64)
        elif self.shuffle:
            order = (self.generator or default_generator()).permutation(n)
        else:
            order = np.arange(n)
        fast = self.collate_fn is None and hasattr(self.dataset, "batch")
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            indices = order[start:start + self.batch_size]
            if fast:
                yield self.dataset.batch(indices)
            else:
                collate = self.collate_fn or default_collate
                yield collate([self.dataset[int(i)] for i in indices])
