"""`dj.data`: Dataset, TensorDataset, Subset, ConcatDataset, random_split, DataLoader and bundled
datasets (`dj.data.datasets`)."""

from . import datasets
from .dataset import Dataset, TensorDataset
from .loader import DataLoader, default_collate
from .subset import ConcatDataset, Subset, random_split
