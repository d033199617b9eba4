"""The vendored CNN, RNN, autoencoder and GAN programs give TensorFlow's numbers:
tests/programs/fixtures/tf1_ops_programs.json holds what TensorFlow's tf.compat.v1 printed from
the same initial values and data (tools/tf1_ops_reference.py), at optimize=0 and optimize=2;
the layers' and cells' variables have TensorFlow's names and shapes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import dongjing.compat.v1 as tf
from dongjing.compat.v1.unsupported import NotProvidedError

PROGRAMS = Path(__file__).parent / "programs"
sys.path.insert(0, str(PROGRAMS))
import tf1_ops_harness as harness  # noqa: E402

sys.path.remove(str(PROGRAMS))

FIXTURE = json.loads((PROGRAMS / "fixtures" / "tf1_ops_programs.json").read_text())
NEEDS = {"tf1_cnn_raw.py": ["sklearn"], "tf1_rnn_lstm.py": ["sklearn"],
         "tf1_rnn_bidirectional.py": ["sklearn"],
         "tf1_gan.py": ["sklearn", "matplotlib"], "tf1_ae_autoencoder.py": ["sklearn",
                                                                            "matplotlib"],
         "tf1_ae_vae.py": ["sklearn", "matplotlib", "scipy"]}
NEEDS["tf1_cnn_layers_dataset.py"] = ["sklearn"]
# what a program needs from the other half of issue 32 (tf.train, variable scopes)
MISSING = {"tf1_ae_autoencoder.py": ("train", "RMSPropOptimizer"),
           "tf1_ae_vae.py": ("train", "RMSPropOptimizer"),
           "tf1_cnn_layers_dataset.py": (None, "variable_scope")}


def _session_at(level: int):
    class SessionAt(tf.Session):
        def __init__(self, target="", graph=None, config=None):
            super().__init__(target, graph, config)
            self.optimize = level

    return SessionAt


def _trainable(variables: list, count: int) -> list:
    """Name (without TF's ':0'; None for plain tf.Variables, whose numbering is another
    module's) and shape of the first `count` variables."""
    out = []
    for name, shape in variables[:count]:
        name = name.split(":")[0]
        out.append([None if name.split("_")[0] == "Variable" else name, shape])
    return out


@pytest.mark.parametrize("optimize", [0, 2], ids=["O0", "O2"])
@pytest.mark.parametrize("name", list(harness.CASES))
def test_program_gives_tensorflows_numbers(name, optimize, monkeypatch):
    for module in NEEDS.get(name, []):
        pytest.importorskip(module)
    if "matplotlib" in NEEDS.get(name, []):
        import matplotlib

        matplotlib.use("Agg")
    if name in MISSING:
        module, attr = MISSING[name]
        try:
            getattr(tf if module is None else getattr(tf, module), attr)
        except NotProvidedError:
            pytest.skip(f"{attr} is not provided yet")
    expected = FIXTURE["programs"][name]
    monkeypatch.setattr(tf, "Session", _session_at(optimize))
    got = harness.run_program(name, tf, harness.DJ_IMPORTS)
    assert got["error"] is None and expected["error"] is None, (got["error"], got["stdout"])
    numbers = harness.numbers(got["stdout"])
    assert len(numbers) == len(expected["numbers"]), got["stdout"]
    np.testing.assert_allclose(numbers, expected["numbers"], rtol=1e-4, atol=1e-5,
                               err_msg=got["stdout"])
    count = len(got["variables"])
    assert _trainable(got["variables"], count) == _trainable(expected["variables"], count)


def test_fixture_says_which_tensorflow_made_it():
    assert FIXTURE["made_by"]["tensorflow"].startswith("2.")
    assert set(FIXTURE["programs"]) == set(harness.CASES)
