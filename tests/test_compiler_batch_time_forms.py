"""batch_time_matmuls matches the forms users write a recurrence in, in any operand order:
each gets the program of the plain `x[t] @ W + h @ U + b` form, with equal values."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn.functional as F
from dongjing.compiler import build_program

T, B, D, H = 6, 3, 4, 5
_rng = np.random.default_rng(7)
W = _rng.uniform(-0.5, 0.5, (D, H)).astype(np.float32)
U = _rng.uniform(-0.5, 0.5, (H, H)).astype(np.float32)
BIAS = _rng.uniform(-0.5, 0.5, (H,)).astype(np.float32)
XV = _rng.standard_normal((T, B, D)).astype(np.float32)

FORMS = {  # the step's pre-activation, and the weights it reads
    "x@W + h@U + b": (lambda x, h, p: x @ p["W"] + h @ p["U"] + p["b"], "W U b"),
    "matmul(h, U) + matmul(x, W) + b": (lambda x, h, p: dj.matmul(h, p["U"]) + dj.matmul(
        x, p["W"]) + p["b"], "W U b"),
    "b + x@W + h@U": (lambda x, h, p: p["b"] + x @ p["W"] + h @ p["U"], "W U b"),
    "h@U + (x@W + b)": (lambda x, h, p: h @ p["U"] + (x @ p["W"] + p["b"]), "W U b"),
    "b + (h@U + x@W)": (lambda x, h, p: p["b"] + (h @ p["U"] + x @ p["W"]), "W U b"),
    "F.linear(x) + F.linear(h)": (lambda x, h, p: F.linear(x, p["Wt"], p["b"]) + F.linear(
        h, p["Ut"]), "Wt Ut b"),
    "F.linear(h) + F.linear(x)": (lambda x, h, p: F.linear(h, p["Ut"]) + F.linear(
        x, p["Wt"], p["b"]), "Wt Ut b"),
    "F.linear(x, no bias) + h@U + b": (lambda x, h, p: F.linear(x, p["Wt"]) + h @ p["U"]
                                       + p["b"], "Wt U b"),
}


def _graph(step, names="W U b"):
    """The W5 recurrence (small) through `step(x_t, h, params)`, loss and weight gradients."""
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((T, B, D), dj.float32, name="x")
        p = {"W": dj.Variable(W, name="W"), "U": dj.Variable(U, name="U"),
             "b": dj.Variable(BIAS, name="b")}
        p["Wt"], p["Ut"] = dj.Variable(W.T.copy(), name="Wt"), dj.Variable(U.T.copy(), name="Ut")
        h = dj.zeros((B, H))
        for t in range(T):
            h = dj.tanh(step(x[t], h, p))
        loss = dj.sum(h)
        grads = dj.gradients(loss, [p[name] for name in names.split()])
    return g, x, [loss, *grads]


def _program(g, x, fetches, level=2):
    return build_program(g, [f.node for f in fetches], [x.node], level)


def _shape_of(program) -> Counter:
    """The compiled program's ops, without the weight layout ops `F.linear` adds (its
    transposed weights are folded to constants or one permute each)."""
    return Counter(n.op.name for n in program.graph.nodes
                   if n.op.name not in ("permute", "variable"))


def _batched(program) -> list[str]:
    return [c for s in program.stats if s["pass"] == "batch_time_matmuls" for c in s["changes"]]


def _reference():
    g, x, fetches = _graph(*FORMS["x@W + h@U + b"])
    return _program(g, x, fetches)


@pytest.mark.parametrize("form", list(FORMS))
def test_each_form_gets_the_reference_program_and_its_values(form):
    reference = _reference()
    g, x, fetches = _graph(*FORMS[form])
    fast = _program(g, x, fetches)
    assert _shape_of(fast) == _shape_of(reference), _batched(fast)
    changes = _batched(fast)
    assert any(f"{T} products %x[t] @" in c for c in changes)
    assert any("added once" in c for c in changes)
    assert sum("-> one" in c for c in changes) == 4  # x@W; the W, U and b gradient sums
    plain = _program(g, x, fetches, level=0)
    for a, b in zip(fast([XV]), plain([XV])):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_an_rnn_cell_folds_both_biases_and_batches_its_gradients():
    dj.manual_seed(0)
    cell = dj.nn.RNNCell(D, H)
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((T, B, D), dj.float32, name="x")
        h = dj.zeros((B, H))
        for t in range(T):
            h = cell(x[t], h)
        loss = dj.sum(h)
        grads = dj.gradients(loss, list(cell.parameters()))
    fetches = [loss, *grads]
    fast = _program(g, x, fetches)
    changes = _batched(fast)
    assert sum("added once" in c for c in changes) == 2, changes
    assert any(f"{T} products G_t.T @ %x[t] -> one" in c for c in changes)
    matmuls = Counter(n.op.name for n in fast.graph.nodes)["matmul"]
    assert matmuls == Counter(n.op.name for n in _reference().graph.nodes)["matmul"]
    plain = _program(g, x, fetches, level=0)
    for a, b in zip(fast([XV]), plain([XV])):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_a_bias_only_some_steps_add_is_not_folded():
    def step(x, h, p, count=[0]):  # noqa: B006  (counts the steps of one graph)
        count[0] += 1
        return x @ p["W"] + h @ p["U"] + (p["b"] if count[0] % 2 else 0.0)

    g, x, fetches = _graph(step)
    fast = _program(g, x, fetches)
    assert not any("added once" in c for c in _batched(fast))
    plain = _program(g, x, fetches, level=0)
    for a, b in zip(fast([XV]), plain([XV])):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
