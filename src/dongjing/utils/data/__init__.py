"""`dongjing.utils.data`: PyTorch's import path for `dj.data` (a plain re-export list)."""

from ...data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    WorkerInfo,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)
from ...data.distributed_sampler import DistributedSampler

__all__ = [
    "BatchSampler",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
