"""`dj.data`: Dataset, TensorDataset, DataLoader and bundled datasets (`dj.data.datasets`)."""

from . import datasets
from .dataset import Dataset, TensorDataset
from .loader import DataLoader, default_collate
