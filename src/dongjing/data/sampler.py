"""Samplers: the order in which a DataLoader reads a map-style dataset, and its batches."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized

import numpy as np

from ..devices.random import generator as default_generator


class Sampler:
    """An iterable of dataset indices (PyTorch's base class; subclasses define `__iter__`)."""

    def __init__(self, data_source: Sized | None = None):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Indices 0, 1, ..., len(data_source) - 1."""

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new random order each epoch, drawn from `generator` (default: dongjing's, seeded by
    `dj.manual_seed`); with `replacement`, `num_samples` independent draws."""

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator: np.random.Generator | None = None):
        super().__init__(data_source)
        self.replacement, self.generator = bool(replacement), generator
        self._num_samples = num_samples
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise ValueError(f"RandomSampler: num_samples must be a positive integer, got "
                             f"{num_samples!r}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        rng = self.generator or default_generator()
        n = len(self.data_source)
        if self.replacement:
            return iter(rng.integers(0, n, self.num_samples).tolist())
        order = [int(i) for _ in range(self.num_samples // n) for i in rng.permutation(n)]
        if self.num_samples % n:
            order += rng.permutation(n)[: self.num_samples % n].tolist()
        return iter(order)

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order each epoch."""

    def __init__(self, indices: Sequence[int], generator: np.random.Generator | None = None):
        super().__init__(None)
        self.indices, self.generator = list(indices), generator

    def __iter__(self) -> Iterator[int]:
        rng = self.generator or default_generator()
        return iter([self.indices[i] for i in rng.permutation(len(self.indices))])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probabilities proportional to `weights`."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: np.random.Generator | None = None):
        super().__init__(None)
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 1 or w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("WeightedRandomSampler: weights must be a non-empty 1-D sequence "
                             "of finite non-negative numbers")
        if not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(f"WeightedRandomSampler: num_samples must be a positive integer, "
                             f"got {num_samples!r}")
        if not replacement and num_samples > np.count_nonzero(w):
            raise ValueError(f"WeightedRandomSampler: {num_samples} samples without replacement "
                             f"from {np.count_nonzero(w)} non-zero weights")
        self.weights, self.num_samples = w, num_samples
        self.replacement, self.generator = bool(replacement), generator

    def __iter__(self) -> Iterator[int]:
        rng = self.generator or default_generator()
        p = self.weights / self.weights.sum()
        picks = rng.choice(len(p), size=self.num_samples, replace=self.replacement, p=p)
        return iter(picks.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of `batch_size` indices from `sampler`; `drop_last` drops a short last one."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool):
        super().__init__(None)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size must be a positive integer, got "
                             f"{batch_size!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, bool(drop_last)

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for index in self.sampler:
            batch.append(int(index))
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
