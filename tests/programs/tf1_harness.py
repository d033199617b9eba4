"""Runs the vendored tf1_* programs (and the probes of tf1_probes.py) on a `tf` module, with
the same initial values and data whichever module it is: dongjing.compat.v1 in the tests,
TensorFlow's tf.compat.v1 in tools/tf1_reference.py (which writes fixtures/*.json).

Same initial values: `tf.global_variables_initializer` is wrapped so that the trainable
variables get fixed values (drawn from NumPy, by their creation order) and the rest (optimizer
slots, counters) their own initial values. Same data: NumPy's global generator is seeded first.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

import numpy as np

PROGRAMS = Path(__file__).parent
DJ_IMPORT = "import dongjing.compat.v1 as tf"
TF_IMPORT = "import tensorflow.compat.v1 as tf; tf.disable_v2_behavior()"

_FAST_MLP = {"n_hidden_1 = 256": "n_hidden_1 = 32", "n_hidden_2 = 256": "n_hidden_2 = 32"}

# program -> the substitutions that keep it fast (fewer epochs, smaller layers)
CASES = {
    "tf1_basic_nlintz_linear_regression.py": {"for i in range(100):": "for i in range(3):"},
    "tf1_cs20si_linreg_placeholder.py": {"for i in range(100): ": "for i in range(4): "},
    "tf1_cs20si_variables.py": {},
    "tf1_cs20si_variable_sharing.py": {},
    "tf1_save_restore_model.py": {"for epoch in range(3):": "for epoch in range(1):",
                                  "for epoch in range(7):": "for epoch in range(1):",
                                  **_FAST_MLP},
    "tf1_tensorboard_basic.py": {"training_epochs = 25": "training_epochs = 2"},
    "tf1_tensorboard_advanced.py": {"training_epochs = 25": "training_epochs = 1", **_FAST_MLP},
}


def fixed_value(index: int, shape, dtype) -> np.ndarray:
    """The fixed initial value of the `index`-th trainable variable."""
    rng = np.random.default_rng(1000 + index)
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return rng.integers(-5, 6, shape).astype(dtype)
    return (rng.standard_normal(shape) * 0.1).astype(dtype)


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


def run_program(name: str, tf, import_line: str) -> dict:
    """Run program `name` with its import line replaced by `import_line` (which binds `tf`):
    {"stdout": its output, "error": "Type: message" or None, "variables": [[name, shape]]}."""
    source = (PROGRAMS / name).read_text()
    assert DJ_IMPORT in source, name
    source = source.replace(DJ_IMPORT, import_line)
    for old, new in CASES[name].items():
        assert old in source, (name, old)
        source = source.replace(old, new)
    tf.reset_default_graph()
    np.random.seed(0)
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


_REPR = re.compile(r"<[^>]*>|Took: [0-9.]+ seconds|/tmp/\S*|\d{4,}_\S+")


def numbers(text: str) -> list[float]:
    """The numbers a program printed (not those inside reprs, paths or timings)."""
    text = _REPR.sub(" ", text)
    return [float(m) for m in re.findall(r"(?<![\w.])-?\d+\.?\d*(?:[eE][-+]?\d+)?", text)]
