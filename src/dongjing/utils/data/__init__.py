"""`dongjing.utils.data`: PyTorch's import path for `dj.data` (a plain re-export list)."""

from ...data import (
    ConcatDataset,
    DataLoader,
    Dataset,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)
from ...data.distributed_sampler import DistributedSampler

__all__ = [
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "Subset",
    "TensorDataset",
    "DistributedSampler",
    "default_collate",
    "random_split",
]
