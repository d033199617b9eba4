"""`dongjing.utils.data.dataset`: PyTorch's module path `torch.utils.data.dataset` for the
dataset classes (a plain re-export; they live in `dongjing.data`)."""

from ...data import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split

__all__ = ["ConcatDataset", "Dataset", "IterableDataset", "Subset", "TensorDataset",
           "random_split"]
