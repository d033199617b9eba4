"""`dj.data`: Dataset, IterableDataset, TensorDataset, Subset, ConcatDataset, random_split,
samplers, DataLoader (with worker processes) and bundled datasets (`dj.data.datasets`)."""

from . import datasets
from .collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset, TensorDataset
from .loader import DataLoader
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from .subset import ConcatDataset, Subset, random_split
from .worker import WorkerInfo, get_worker_info
