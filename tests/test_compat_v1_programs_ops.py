"""Published TF1 tutorials with randomness inside their graphs (dropout, sampled losses, noise),
which TensorFlow's comparison (tests/test_compat_v1_tf1_ops_programs.py) turns off or leaves
out: each runs (fewer steps, smaller sizes, by substitutions in its source) at optimize=0 and
optimize=2 from the same seeds and prints the same numbers, and it learns."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from test_compat_v1_programs import run_program

import dongjing as dj
import dongjing.compat.v1 as tf

sys.path.insert(0, str(Path(__file__).parent / "programs"))
from tf1_ops_harness import SMALL_CNN  # noqa: E402

sys.path.pop(0)


def _at(level: int):
    class SessionAt(tf.Session):
        def __init__(self, target="", graph=None, config=None):
            super().__init__(target, graph, config)
            self.optimize = level

    return SessionAt


def run_both(monkeypatch, name: str, replace: dict) -> tuple[str, str]:
    """The program's output at optimize=0 and at optimize=2, from the same seeds."""
    outputs = []
    for level in (0, 2):
        monkeypatch.setattr(tf, "Session", _at(level))
        dj.manual_seed(0)
        np.random.seed(0)
        import random

        random.seed(0)
        outputs.append(run_program(name, replace))
    return outputs[0], outputs[1]


def numbers(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"-?\d+\.\d+(?:e[-+]?\d+)?", text)]


def _same(o0: str, o2: str, rtol: float = 1e-4) -> list[float]:
    a, b = numbers(o0), numbers(o2)
    assert a and len(a) == len(b)
    assert a == pytest.approx(b, rel=rtol, abs=1e-5), (o0, o2)
    return a


def test_cnn_raw_with_dropout(monkeypatch):
    """With its dropout on (TensorFlow's comparison, tests/test_compat_v1_tf1_ops_programs.py,
    turns it off): the masks drawn at O0 and O2 are the same draws."""
    pytest.importorskip("sklearn")
    o0, o2 = run_both(monkeypatch, "tf1_cnn_raw.py", SMALL_CNN)
    _same(o0, o2)
    losses = [float(v) for v in re.findall(r"Loss= ([-0-9.e+]+)", o0)]
    assert len(losses) == 3 and all(np.isfinite(losses))


def _small_text8(directory) -> None:
    """A text8.zip of a few thousand words (the program skips its download when it exists)."""
    import zipfile

    rng = np.random.default_rng(0)
    words = ["five", "of", "going", "hardware", "american", "britain"] + [
        f"w{i}" for i in range(40)]
    weights = 1.0 / np.arange(1, len(words) + 1)
    text = " ".join(rng.choice(words, 4000, p=weights / weights.sum()))
    with zipfile.ZipFile(directory / "text8.zip", "w") as f:
        f.writestr("text8", text)


def test_word2vec(monkeypatch, tmp_path):
    _small_text8(tmp_path)
    monkeypatch.chdir(tmp_path)
    o0, o2 = run_both(monkeypatch, "tf1_w2v_word2vec.py", {
        ".lower().split()": ".decode().lower().split()",  # Python 3: see the program's header
        "num_steps = 3000000": "num_steps = 60", "display_step = 10000": "display_step = 20",
        "eval_step = 200000": "eval_step = 60", "embedding_size = 200": "embedding_size = 8",
        "batch_size = 128": "batch_size = 32", "num_sampled = 64": "num_sampled = 8"})
    assert o0 == o2  # the same losses and the same nearest neighbours
    losses = [float(v) for v in re.findall(r"Average Loss= ([-0-9.e+]+)", o0)]
    assert len(losses) == 4 and losses[-1] < losses[0]
    assert o0.count("nearest neighbors:") == 12


def _needs_rmsprop():
    """The VAE trains with tf.train.RMSPropOptimizer (issue 32's item 4)."""
    from dongjing.compat.v1.unsupported import NotProvidedError

    try:
        tf.train.RMSPropOptimizer  # noqa: B018
    except NotProvidedError:
        pytest.skip("tf.train.RMSPropOptimizer is not provided yet")


def test_variational_autoencoder(monkeypatch):
    pytest.importorskip("sklearn")
    pytest.importorskip("scipy")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    _needs_rmsprop()
    o0, o2 = run_both(monkeypatch, "tf1_ae_vae.py", {
        "num_steps = 30000": "num_steps = 41", "hidden_dim = 512": "hidden_dim = 32",
        "i % 1000 == 0": "i % 20 == 0", "n = 20": "n = 2", "plt.show()": "plt.close('all')"})
    losses = _same(o0, o2)
    assert len(losses) == 3 and losses[-1] < losses[0]
