"""Bundled datasets: scikit-learn's 8x8 digits (an optional dependency)."""

from __future__ import annotations

import numpy as np

from .dataset import TensorDataset


def _sklearn():
    try:
        from sklearn import datasets, model_selection
    except ImportError as exc:
        raise ImportError(
            "dj.data.datasets.digits() needs scikit-learn, an optional extra: "
            "pip install 'dongjing[examples]' (or pip install scikit-learn)"
        ) from exc
    return datasets.load_digits, model_selection.train_test_split


def digits(test_size: float = 0.2, random_state: int = 0) -> tuple[TensorDataset, TensorDataset]:
    """scikit-learn's digits as (train, test) TensorDatasets of (x float32 (N, 64), y int64).

    The split is `train_test_split(test_size=0.2, random_state=0)` (1437 / 360 examples);
    features are standardised by the training mean and population std (constant features are
    only centred).
    """
    load_digits, train_test_split = _sklearn()
    x, y = load_digits(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_size,
                                              random_state=random_state)
    mean, std = x_tr.mean(axis=0), x_tr.std(axis=0)
    std[std == 0] = 1.0
    x_tr = ((x_tr - mean) / std).astype(np.float32)
    x_te = ((x_te - mean) / std).astype(np.float32)
    return (TensorDataset(x_tr, y_tr.astype(np.int64)),
            TensorDataset(x_te, y_te.astype(np.int64)))
