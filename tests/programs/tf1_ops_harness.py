"""Runs the vendored programs of tf.nn's convolutions, RNNs, autoencoders and GAN
(tests/programs/tf1_{cnn,rnn,ae,gan}_*.py) on a `tf` module with the same initial values and
data whichever module it is: dongjing.compat.v1 in the tests, TensorFlow's tf.compat.v1 in
tools/tf1_ops_reference.py (which writes fixtures/tf1_ops_programs.json).

Same initial values: `tf.global_variables_initializer` gives the trainable variables fixed
values (drawn from NumPy, by creation order) and the rest their own initial values. Same data:
NumPy's and Python's generators are seeded first. Random ops inside the graphs (dropout, the
VAE's noise) draw differently in the two libraries, so the substitutions below turn them off
(keep probability 1, noise of standard deviation 0) for the comparison; the programs' own tests
(tests/test_compat_v1_programs_ops.py) run them with their randomness.
"""

from __future__ import annotations

import contextlib
import io
import random
import re
import sys
from pathlib import Path

import numpy as np

PROGRAMS = Path(__file__).parent
DJ_IMPORTS = ("import dongjing.compat.v1 as tf", "from dongjing.compat.v1.contrib import rnn")
# TensorFlow 2's tf.compat.v1 has no tf.contrib: its cells and static_rnn live in tf.nn
TF_IMPORTS = ("import tensorflow.compat.v1 as tf; tf.disable_v2_behavior(); import types; "
              "tf.contrib = types.SimpleNamespace(rnn=types.SimpleNamespace("
              "BasicLSTMCell=tf.nn.rnn_cell.BasicLSTMCell, static_rnn=tf.nn.static_rnn, "
              "static_bidirectional_rnn=tf.nn.static_bidirectional_rnn), "
              "layers=types.SimpleNamespace(flatten=tf.layers.flatten))",
              "rnn = tf.contrib.rnn")

SMALL_CNN = {"training_iters = 200000": "training_iters = 16 * 7", "batch_size = 128":
             "batch_size = 16", "display_step = 10": "display_step = 2",
             "[5, 5, 1, 32]": "[5, 5, 1, 8]", "[5, 5, 32, 64]": "[5, 5, 8, 16]",
             "[7*7*64, 1024]": "[7*7*16, 32]", "[1024, n_classes]": "[32, n_classes]",
             "[32]))": "[8]))", "[64]))": "[16]))", "[1024]))": "[32]))"}

# program -> the substitutions that keep it fast (and, for the comparison, deterministic)
CASES = {
    "tf1_cnn_raw.py": {**SMALL_CNN, "dropout = 0.75": "dropout = 1.0"},
    "tf1_cnn_layers_dataset.py": {"num_steps = 1000": "num_steps = 5", "batch_size = 128":
                                  "batch_size = 16", "display_step = 100": "display_step = 2",
                                  "x, 32, 5,": "x, 4, 5,", "conv1, 64, 3,": "conv1, 8, 3,",
                                  "(fc1, 1024)": "(fc1, 16)", "dropout = 0.75": "dropout = 0.0"},
    "tf1_rnn_lstm.py": {"training_iters = 100000": "training_iters = 32 * 9",
                        "batch_size = 128": "batch_size = 32", "display_step = 10":
                        "display_step = 2", "n_hidden = 128": "n_hidden = 16"},
    "tf1_rnn_bidirectional.py": {"training_steps = 10000": "training_steps = 7",
                                 "batch_size = 128": "batch_size = 32", "display_step = 200":
                                 "display_step = 3", "num_hidden = 128": "num_hidden = 8",
                                 "learning_rate = 0.001": "learning_rate = 0.1"},
    "tf1_rnn_dynamic.py": {"training_iters = 1000000": "training_iters = 64 * 11",
                           "batch_size = 128": "batch_size = 64", "display_step = 10":
                           "display_step = 2", "n_hidden = 64": "n_hidden = 8",
                           "n_samples=1000, max": "n_samples=256, max",
                           "n_samples=500, max": "n_samples=128, max"},
    "tf1_gan.py": {"num_steps = 30000": "num_steps = 21", "gen_hidden_dim = 256":
                   "gen_hidden_dim = 16", "disc_hidden_dim = 256": "disc_hidden_dim = 16",
                   "noise_dim = 100": "noise_dim = 8", "i % 1000 == 0": "i % 5 == 0",
                   "plt.waitforbuttonpress()": "plt.close('all')", "newshape=": ""},
    "tf1_ae_autoencoder.py": {"training_epochs = 20": "training_epochs = 3",
                              "n_hidden_1 = 256": "n_hidden_1 = 32", "n_hidden_2 = 128":
                              "n_hidden_2 = 8", "plt.waitforbuttonpress()": "plt.close('all')"},
    "tf1_ae_vae.py": {"num_steps = 30000": "num_steps = 21", "hidden_dim = 512":
                      "hidden_dim = 32", "i % 1000 == 0": "i % 5 == 0", "n = 20": "n = 2",
                      "plt.show()": "plt.close('all')",
                      "mean=0., stddev=1.0": "mean=0., stddev=0.0"},
}


def fixed_value(index: int, shape, dtype) -> np.ndarray:
    """The fixed initial value of the `index`-th trainable variable."""
    rng = np.random.default_rng(1000 + index)
    return (rng.standard_normal(shape) * 0.1).astype(np.dtype(dtype))


def _numpy_dtype(dtype):
    return np.dtype(getattr(dtype, "as_numpy_dtype", dtype))


@contextlib.contextmanager
def fixed_initial_values(tf):
    """Wrap `tf.global_variables_initializer` to give trainable variables fixed values."""
    original = tf.global_variables_initializer

    def initializer():
        trainable = tf.trainable_variables()
        ids = {id(v) for v in trainable}
        ops = [tf.assign(v, fixed_value(i, [int(d) for d in v.get_shape()],
                                        _numpy_dtype(v.dtype)))
               for i, v in enumerate(trainable)]
        rest = [v for v in tf.global_variables() if id(v) not in ids]
        return tf.group(*ops, tf.variables_initializer(rest))

    tf.global_variables_initializer = initializer
    try:
        yield
    finally:
        tf.global_variables_initializer = original


def run_program(name: str, tf, imports: tuple) -> dict:
    """Run program `name` with its import lines replaced by `imports` (binding `tf`, `rnn`):
    {"stdout": its output, "error": "Type: message" or None, "variables": [[name, shape]]}."""
    source = (PROGRAMS / name).read_text()
    for dj_line, line in zip(DJ_IMPORTS, imports):
        source = source.replace(dj_line, line)
    for old, new in CASES[name].items():
        assert old in source, (name, old)
        source = source.replace(old, new)
    tf.reset_default_graph()
    np.random.seed(0)
    random.seed(0)
    out, error, namespace = io.StringIO(), None, {"__name__": "__main__"}
    sys.path.insert(0, str(PROGRAMS))
    try:
        with fixed_initial_values(tf), contextlib.redirect_stdout(out):
            exec(compile(source, str(PROGRAMS / name), "exec"), namespace)
    except Exception as exc:  # the published program's own error is part of what it does
        error = f"{type(exc).__name__}: {exc}"
    finally:
        sys.path.remove(str(PROGRAMS))
    variables = [[v.name, [int(d) for d in v.get_shape()]] for v in tf.global_variables()]
    tf.reset_default_graph()
    return {"stdout": out.getvalue(), "error": error, "variables": variables}


def numbers(text: str) -> list[float]:
    """The numbers a program printed."""
    return [float(m) for m in re.findall(r"(?<![\w.])-?\d+\.?\d*(?:[eE][-+]?\d+)?", text)]
