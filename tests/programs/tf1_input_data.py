"""A stand-in for `tensorflow.examples.tutorials.mnist.input_data` (which downloads MNIST), for
the vendored TF1 tutorials: scikit-learn's 8x8 digits, bundled through dongjing.data, each image
enlarged to MNIST's 28x28 (every pixel a 3x3 block, 2 pixels of border), flattened to 784
features, with TF's DataSet interface (`num_examples`, `next_batch`, `images`, `labels`)."""

from __future__ import annotations

import numpy as np

from dongjing.data.datasets import digits


def _mnist_shaped(x: np.ndarray) -> np.ndarray:
    images = x.reshape(-1, 8, 8)
    images = np.kron(images, np.ones((1, 3, 3), np.float32))
    images = np.pad(images, ((0, 0), (2, 2), (2, 2)))
    return images.reshape(-1, 784).astype(np.float32)


class DataSet:
    """Images and labels with TF1's `next_batch` (reshuffled after every pass)."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, seed: int = 0):
        self.images, self.labels = images, labels
        self.num_examples = len(images)
        self._rng = np.random.default_rng(seed)
        self._order = self._rng.permutation(self.num_examples)
        self._at = 0

    def next_batch(self, batch_size: int):
        if self._at + batch_size > self.num_examples:
            self._order = self._rng.permutation(self.num_examples)
            self._at = 0
        take = self._order[self._at:self._at + batch_size]
        self._at += batch_size
        return self.images[take], self.labels[take]


class DataSets:
    def __init__(self, train: DataSet, test: DataSet):
        self.train, self.test = train, test


def read_data_sets(train_dir: str, one_hot: bool = False) -> DataSets:
    """The digits as MNIST-shaped `train` and `test` DataSets (`train_dir` is not used)."""
    train, test = digits()
    parts = []
    for ds in (train, test):
        x, y = (t.numpy() for t in ds.tensors)
        labels = np.eye(10, dtype=np.float32)[y] if one_hot else y
        parts.append(DataSet(_mnist_shaped(x), labels))
    return DataSets(*parts)
