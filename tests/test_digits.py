"""The flagship example, short: three epochs of the digits MLP and CNN, eagerly and
as a static graph from one seed give the same losses and a stated test accuracy."""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import pytest

import dongjing as dj

pytest.importorskip("sklearn")

_PATH = os.path.join(os.path.dirname(__file__), os.pardir, "examples", "digits.py")
_spec = importlib.util.spec_from_file_location("digits_example", _PATH)
digits = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = digits  # dataclasses look their module up
_spec.loader.exec_module(digits)


@pytest.fixture(scope="module")
def data():
    with digits.blas_threads(1):
        yield dj.data.datasets.digits()


def test_mlp_eager_and_static_agree_and_learn(data):
    train, test = data
    eager = digits.train_eager("mlp", train, test, epochs=3)
    static = digits.train_static("mlp", train, test, epochs=3)
    assert len(eager.losses) == len(static.losses) == 3 * 23
    np.testing.assert_allclose(static.losses, eager.losses, rtol=1e-4, atol=1e-6)
    assert eager.test_accuracy >= 0.95 and static.test_accuracy >= 0.95  # 0.958 measured
    assert abs(eager.test_accuracy - static.test_accuracy) <= 1 / 360
    assert eager.losses[-1] < 0.3 * eager.losses[0]


def test_cnn_eager_and_static_agree_and_learn(data):
    train, test = data
    eager = digits.train_eager("cnn", train, test, epochs=3)
    static = digits.train_static("cnn", train, test, epochs=3)
    np.testing.assert_allclose(static.losses, eager.losses, rtol=1e-4, atol=1e-6)
    assert eager.test_accuracy >= 0.9 and static.test_accuracy >= 0.9  # 0.933 measured


def test_outputs_and_checkpoint_reload(data, tmp_path):
    train, test = data
    run = digits.train_eager("mlp", train, test, epochs=1)
    ckpt, png = digits.save_outputs([run], str(tmp_path))
    assert os.path.getsize(ckpt) > 0 and (png is None or os.path.getsize(png) > 0)
    assert digits.check_checkpoint(ckpt, run, test) == run.test_accuracy


def test_jit_model_loop_agrees(data):
    if not hasattr(dj, "jit"):
        pytest.skip("dj.jit is not available")
    train, test = data
    eager = digits.train_eager("mlp", train, test, epochs=1)
    traced = digits.train_eager("mlp", train, test, epochs=1, jit=True)
    np.testing.assert_allclose(traced.losses, eager.losses, rtol=1e-4, atol=1e-6)


def test_progress_bar_counts_steps_over_the_whole_run(data, tmp_path, monkeypatch):
    """The bar's count moves with the steps (it once stayed at 0% until each epoch ended)."""
    tqdm = pytest.importorskip("tqdm")
    seen = []

    class Recording(tqdm.tqdm):
        def update(self, n=1):
            super().update(n)
            fields = dict(kv.split("=") for kv in self.postfix.split(", "))
            seen.append((self.n, self.total, fields))

    monkeypatch.setattr(digits, "tqdm", Recording)
    monkeypatch.setattr(digits, "SHOW_PROGRESS", True)
    train, test = data
    digits.train_eager("mlp", train, test, 2, 0)
    steps = 2 * len(dj.data.DataLoader(train, batch_size=64))
    assert [n for n, _, _ in seen] == list(range(1, steps + 1))
    assert {total for _, total, _ in seen} == {steps}
    assert seen[-1][2]["epoch"] == "2/2"
