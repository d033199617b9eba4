"""PyTorch's module path torch.utils.data.dataset names dongjing's dataset classes."""

from __future__ import annotations

import dongjing as dj
from dongjing.utils.data import dataset


def test_dataset_module_path_holds_the_dataset_classes():
    assert dataset.IterableDataset is dj.utils.data.IterableDataset
    assert dataset.Dataset is dj.utils.data.Dataset
    assert dataset.TensorDataset is dj.utils.data.TensorDataset
    assert dataset.random_split is dj.utils.data.random_split
