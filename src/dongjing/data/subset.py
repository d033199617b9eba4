"""Dataset views: Subset (some indices of a dataset), ConcatDataset, and random_split."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

import numpy as np

from ..devices.random import generator as default_generator
from .dataset import Dataset


class Subset(Dataset):
    """The examples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]):
        self.dataset, self.indices = dataset, [int(i) for i in indices]

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index):
        if isinstance(index, (list, tuple)):
            return [self.dataset[self.indices[i]] for i in index]
        return self.dataset[self.indices[index]]

    def __getattr__(self, name: str):
        # DataLoader's fast path: `batch` exists only when the underlying dataset has one
        if name == "batch" and hasattr(self.dataset, "batch"):
            return lambda indices: self.dataset.batch(np.asarray(self.indices)[indices])
        raise AttributeError(f"'Subset' object has no attribute {name!r}")


class ConcatDataset(Dataset):
    """Several datasets one after another."""

    def __init__(self, datasets: Sequence[Dataset]):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset needs at least one dataset")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]))

    def __len__(self) -> int:
        return int(self.cumulative_sizes[-1])

    def __getitem__(self, index: int):
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"ConcatDataset index {index} out of range for length {len(self)}")
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = 0 if which == 0 else int(self.cumulative_sizes[which - 1])
        return self.datasets[which][index - start]


def random_split(dataset: Dataset, lengths: Sequence[int | float],
                 generator: np.random.Generator | None = None) -> list[Subset]:
    """Split `dataset` into non-overlapping random Subsets of the given lengths (or fractions
    summing to 1, the remainder spread one by one from the first), drawn from `generator`
    (default: dongjing's, seeded by `dj.manual_seed`)."""
    n = len(dataset)
    lengths = list(lengths)
    if lengths and all(isinstance(x, float) for x in lengths) and math.isclose(sum(lengths), 1):
        counts = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n or any(int(x) != x or x < 0 for x in lengths):
        raise ValueError(f"random_split: lengths {lengths} must be non-negative integers summing "
                         f"to the dataset's length {n} (or fractions summing to 1)")
    rng = generator if isinstance(generator, np.random.Generator) else None
    if generator is not None and rng is None:
        raise TypeError("random_split: generator must be a numpy.random.Generator (dongjing "
                        "has no torch.Generator; seed with dj.manual_seed instead)")
    order = (rng or default_generator()).permutation(n)
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, order[start:start + int(length)].tolist()))
        start += int(length)
    return out
