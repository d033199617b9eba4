"""Published TF1 tutorial scripts (tests/programs/tf1_*.py, vendored with only the import line
changed) run on dongjing.compat.v1 and give the numbers the math says they should."""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import dongjing.compat.v1 as tf

PROGRAMS = Path(__file__).parent / "programs"


def run_program(name: str, replace: dict | None = None) -> str:
    """Execute a vendored program (with `replace` substitutions in its source); its stdout."""
    source = (PROGRAMS / name).read_text()
    for old, new in (replace or {}).items():
        assert old in source, f"{old!r} not in {name}"
        source = source.replace(old, new)
    tf.reset_default_graph()
    out = io.StringIO()
    sys.path.insert(0, str(PROGRAMS))
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(source, str(PROGRAMS / name), "exec"), {"__name__": "__main__"})
    finally:
        sys.path.remove(str(PROGRAMS))
        tf.reset_default_graph()
    return out.getvalue()


def numbers_after(label: str, text: str) -> list[float]:
    return [float(m) for m in re.findall(re.escape(label) + r"\s*\[?\s*([-0-9.e+]+)", text)]


def test_getting_started_prints_the_guides_numbers():
    out = run_program("tf1_getting_started.py")
    (w,), (b,), (loss,) = (numbers_after(k, out) for k in ("W:", "b:", "loss:"))
    # the guide prints W: [-0.9999969] b: [ 0.99999082] loss: 5.69997e-11; exact fit is W=-1, b=1
    assert w == pytest.approx(-0.9999969, abs=2e-6)
    assert b == pytest.approx(0.9999908, abs=5e-6)
    assert 0 <= loss < 1e-9


def test_linear_regression_reaches_least_squares():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    np.random.seed(0)  # the script draws its initial W, b from numpy.random
    out = run_program("tf1_linear_regression.py",
                      {"training_epochs = 1000": "training_epochs = 200"})
    x = np.array([3.3, 4.4, 5.5, 6.71, 6.93, 4.168, 9.779, 6.182, 7.59, 2.167, 7.042, 10.791,
                  5.313, 7.997, 5.654, 9.27, 3.1])
    y = np.array([1.7, 2.76, 2.09, 3.19, 1.694, 1.573, 3.366, 2.596, 2.53, 1.221, 2.827, 3.465,
                  1.65, 2.904, 2.42, 2.94, 1.3])
    w_ls, b_ls = np.polyfit(x, y, 1)
    best = np.sum((w_ls * x + b_ls - y) ** 2) / (2 * len(x))
    line = out.split("Training cost=")[1].splitlines()[0]
    cost, w, b = (float(v) for v in re.findall(r"[-0-9.]+(?:e[-+]?\d+)?", line)[:3])
    assert best <= cost < 1.05 * best  # Adam on single examples: close to, not at, the optimum
    assert (w, b) == pytest.approx((w_ls, b_ls), abs=0.1)
    assert cost == pytest.approx(np.sum((w * x + b - y) ** 2) / (2 * len(x)), rel=1e-4)
    costs = [float(c) for c in re.findall(r"Epoch: \d+ cost= ([-0-9.e]+)", out)]
    assert len(costs) == 4 and costs[0] > costs[-1] and costs[-1] == pytest.approx(cost)
    testing = numbers_after("Testing cost=", out)[0]
    x_te = np.array([6.83, 4.668, 8.9, 7.91, 5.7, 8.7, 3.1, 2.1])
    y_te = np.array([1.84, 2.273, 3.2, 2.831, 2.92, 3.24, 1.35, 1.03])
    assert testing == pytest.approx(np.sum((w * x_te + b - y_te) ** 2) / 16, rel=1e-4)


def _softmax_regression_reference(mnist, epochs: int, lr: float = 0.01) -> list[float]:
    """The tutorial's training loop in NumPy (softmax regression, batch gradient descent)."""
    w = np.zeros((784, 10))
    b = np.zeros(10)
    avg = []
    for _ in range(epochs):
        total = mnist.train.num_examples // 100
        cost = 0.0
        for _ in range(total):
            xs, ys = mnist.train.next_batch(100)
            logits = xs @ w + b
            p = np.exp(logits - logits.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            cost += -np.mean(np.sum(ys * np.log(np.clip(p, 1e-10, 1.0)), 1)) / total
            g = (p - ys) / len(xs)
            w -= lr * xs.T @ g
            b -= lr * g.sum(0)
        avg.append(cost)
    return avg


def test_logistic_regression_matches_numpy_and_learns():
    pytest.importorskip("sklearn")
    out = run_program("tf1_logistic_regression.py",
                      {"training_epochs = 25": "training_epochs = 4"})
    costs = [float(c) for c in re.findall(r"Epoch: \d+ cost= ([-0-9.e]+)", out)]
    sys.path.insert(0, str(PROGRAMS))
    try:
        import tf1_input_data
    finally:
        sys.path.remove(str(PROGRAMS))
    reference = _softmax_regression_reference(tf1_input_data.read_data_sets("", one_hot=True), 4)
    assert costs == pytest.approx(reference, rel=1e-3)
    assert costs[-1] < costs[0]
    assert numbers_after("Accuracy:", out)[0] > 0.85


def test_multilayer_perceptron_trains():
    pytest.importorskip("sklearn")
    import dongjing as dj

    dj.manual_seed(0)  # tf.random_normal draws from dongjing's generator
    out = run_program("tf1_multilayer_perceptron.py",
                      {"training_epochs = 15": "training_epochs = 3",
                       "n_hidden_1 = 256": "n_hidden_1 = 64",
                       "n_hidden_2 = 256": "n_hidden_2 = 64"})
    costs = [float(c) for c in re.findall(r"Epoch: \d+ cost= ([-0-9.e]+)", out)]
    assert len(costs) == 3 and all(a > b for a, b in zip(costs, costs[1:]))
    assert numbers_after("Accuracy:", out)[0] > 0.3  # ten classes: chance is 0.1
