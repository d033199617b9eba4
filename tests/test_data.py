"""dj.data: TensorDataset, DataLoader batching/shuffling/drop_last, the digits split."""

from __future__ import annotations

import builtins

import numpy as np
import pytest

import dongjing as dj
from dongjing.data import DataLoader, Dataset, TensorDataset
from dongjing.errors import ShapeError


def _ds(n=10):
    return TensorDataset(np.arange(n * 2, dtype=np.float32).reshape(n, 2), np.arange(n))


def test_tensor_dataset_indexing_and_length_check():
    ds = _ds()
    assert len(ds) == 10
    x, y = ds[3]
    np.testing.assert_array_equal(x.numpy(), [6, 7])
    assert y.item() == 3
    with pytest.raises(ShapeError, match="differ in length"):
        TensorDataset(np.zeros((3, 2)), np.zeros(4))


def test_loader_batches_in_order_and_drop_last():
    batches = list(DataLoader(_ds(), batch_size=4))
    assert [len(b[1]) for b in batches] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate([b[1].numpy() for b in batches]), np.arange(10))
    assert len(DataLoader(_ds(), batch_size=4, drop_last=True)) == 2
    assert [len(b[1]) for b in DataLoader(_ds(), batch_size=4, drop_last=True)] == [4, 4]


def test_shuffle_is_seeded_and_a_permutation():
    loader = DataLoader(_ds(), batch_size=3, shuffle=True)
    dj.manual_seed(1)
    a = np.concatenate([b[1].numpy() for b in loader])
    b2 = np.concatenate([b[1].numpy() for b in loader])
    dj.manual_seed(1)
    c = np.concatenate([b[1].numpy() for b in loader])
    np.testing.assert_array_equal(a, c)
    assert sorted(a) == list(range(10)) and not np.array_equal(a, b2)
    own = DataLoader(_ds(), batch_size=10, shuffle=True, generator=np.random.default_rng(5))
    np.testing.assert_array_equal(next(iter(own))[1].numpy(),
                                  np.random.default_rng(5).permutation(10))


def test_generic_dataset_is_collated():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return np.float32(i), i * i

    x, y = next(iter(DataLoader(Squares(), batch_size=5)))
    np.testing.assert_array_equal(y.numpy(), [0, 1, 4, 9, 16])
    assert x.dtype == dj.float32


def test_digits_split_and_standardisation():
    pytest.importorskip("sklearn")
    train, test = dj.data.datasets.digits()
    assert len(train) == 1437 and len(test) == 360
    x, y = train.tensors
    assert x.shape == (1437, 64) and x.dtype == dj.float32 and y.dtype == dj.int64
    means = x.numpy().mean(0)
    np.testing.assert_allclose(means, 0, atol=1e-5)
    stds = x.numpy().std(0)
    assert np.all((np.abs(stds - 1) < 1e-4) | (stds == 0))


def test_digits_without_sklearn_says_what_to_install(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("sklearn"):
            raise ImportError("no sklearn")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(ImportError, match="scikit-learn"):
        dj.data.datasets.digits()
