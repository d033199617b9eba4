"""`dj.utils.data`: PyTorch's import path for `dj.data` (Dataset, DataLoader, samplers)."""

from ..data import DataLoader, Dataset, TensorDataset, default_collate
from ..data.distributed_sampler import DistributedSampler

__all__ = ["DataLoader", "Dataset", "DistributedSampler", "TensorDataset", "default_collate"]
