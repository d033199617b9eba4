"""Published TF1 programs (tests/programs/tf1_basic_*, tf1_cs20si_*, tf1_save_*,
tf1_tensorboard_*), vendored with only the import line changed, give TensorFlow's numbers:
tests/programs/fixtures/tf1_programs.json holds what TensorFlow's tf.compat.v1 printed from the
same initial values and data (tools/tf1_reference.py), at optimize=0 and optimize=2."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import dongjing.compat.v1 as tf

PROGRAMS = Path(__file__).parent / "programs"
sys.path.insert(0, str(PROGRAMS))
import tf1_harness  # noqa: E402

sys.path.remove(str(PROGRAMS))

FIXTURE = json.loads((PROGRAMS / "fixtures" / "tf1_programs.json").read_text())
NEEDS = {"tf1_save_restore_model.py": ["sklearn"], "tf1_tensorboard_basic.py":
         ["sklearn", "tensorboard"], "tf1_tensorboard_advanced.py": ["sklearn", "tensorboard"],
         "tf1_cs20si_linreg_placeholder.py": ["matplotlib", "tensorboard"],
         "tf1_cs20si_variable_sharing.py": ["tensorboard"]}


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the programs write logs and checkpoints where they run
    yield tmp_path


@pytest.mark.parametrize("optimize", [0, 2], ids=["O0", "O2"])
@pytest.mark.parametrize("name", list(tf1_harness.CASES))
def test_program_gives_tensorflows_numbers(name, optimize, in_tmp):
    for module in NEEDS.get(name, []):
        pytest.importorskip(module)
    if "matplotlib" in NEEDS.get(name, []):
        import matplotlib

        matplotlib.use("Agg")
    expected = FIXTURE["programs"][name]
    tf.set_session_optimize(optimize)
    try:
        got = tf1_harness.run_program(name, tf, tf1_harness.DJ_IMPORT)
    finally:
        tf.set_session_optimize(2)
    assert _first_sentence(got["error"]) == _first_sentence(expected["error"]), got["stdout"]
    numbers = tf1_harness.numbers(got["stdout"])
    assert len(numbers) == len(expected["numbers"]), got["stdout"]
    np.testing.assert_allclose(numbers, expected["numbers"], rtol=1e-4, atol=1e-5,
                               err_msg=got["stdout"])
    assert got["variables"] == expected["variables"]


def test_fixture_says_which_tensorflow_made_it():
    assert FIXTURE["made_by"]["tensorflow"].startswith("2.")
    assert set(FIXTURE["programs"]) == set(tf1_harness.CASES)


def _first_sentence(error):
    return None if error is None else error.split(". ")[0].split("\n")[0]
