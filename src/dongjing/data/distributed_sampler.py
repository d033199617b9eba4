"""DistributedSampler: each rank's share of a dataset's indices, the same number on every rank."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from ..distributed import get_rank, get_world_size

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from .dataset import Dataset


class DistributedSampler:
    """The indices rank `rank` of `num_replicas` reads in one epoch: the (shuffled) order dealt
    round-robin, so that the ranks' shares are disjoint and together cover the dataset.

    Without `drop_last` the order is padded by repeating its first indices until it divides
    evenly (every rank takes the same number of steps); with `drop_last` the tail is dropped
    instead. Shuffling is seeded by `seed + epoch`: call `set_epoch(epoch)` before each epoch
    so that every rank draws the same new order. Pass it as `DataLoader(..., sampler=...)`.
    """

    def __init__(self, dataset: Dataset | Sequence[Any], num_replicas: int | None = None,
                 rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False):
        self.num_replicas = get_world_size() if num_replicas is None else int(num_replicas)
        self.rank = get_rank() if rank is None else int(rank)
        if self.num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas must be at least 1, got "
                             f"{self.num_replicas}")
        if not 0 <= self.rank < self.num_replicas:
            raise ValueError(f"DistributedSampler: rank {self.rank} is not in "
                             f"[0, {self.num_replicas})")
        self.dataset, self.shuffle, self.seed = dataset, bool(shuffle), int(seed)
        self.drop_last, self.epoch = bool(drop_last), 0
        n = len(dataset)
        if self.drop_last:
            self.num_samples = n // self.num_replicas
        else:
            self.num_samples = -(-n // self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose order `__iter__` yields (the same on every rank)."""
        self.epoch = int(epoch)

    def indices(self) -> np.ndarray:
        """This rank's indices for the current epoch, as an array."""
        n = len(self.dataset)
        if self.shuffle:
            order = np.random.default_rng(self.seed + self.epoch).permutation(n)
        else:
            order = np.arange(n)
        if self.total_size > n:
            reps = -(-self.total_size // n)
            order = np.tile(order, reps)
        order = order[:self.total_size]
        return order[self.rank:self.total_size:self.num_replicas]

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices().tolist())

    def __len__(self) -> int:
        return self.num_samples
