"""dj.jit check mode and dj.check: silent on correct code; on a difference, a CheckError naming
the first diverging node with its source line: a changed global number, a Python random call,
and a planted wrong rewrite in a compiler pass (named in the report)."""

from __future__ import annotations

import inspect
import random

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing.compiler import pipeline
from dongjing.compiler.ir import PassResult, Rebuilder
from dongjing.ops.registry import OPS

SCALE = 2.0


def _line(fn, text: str) -> str:
    lines, first = inspect.getsourcelines(fn)
    n = next(i for i, line in enumerate(lines) if text in line)
    return f"test_jit_check.py:{first + n}"


def _scaled(x):
    h = dj.tanh(x)
    return h * SCALE + 1.0


def _rolled(x):
    return dj.tanh(x) * random.random()


def _x():
    return dj.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)


def test_correct_code_passes_silently():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Dropout(0.2))
    jm = dj.jit(model, check=2)
    x = dj.tensor(np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32))
    for _ in range(3):
        out = jm(x)
        F.mse_loss(out, dj.zeros(5, 4)).backward()  # the checked result keeps its history
    assert jm.checks_left == 0
    assert model[0].weight.grad is not None
    np.testing.assert_allclose(dj.check(_scaled, _x()).numpy(), _scaled(_x()).numpy())


def test_a_traced_train_step_is_checked_with_its_updates():
    lin = nn.Linear(3, 1)
    opt = dj.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)

    def step(x):
        opt.zero_grad()
        loss = lin(x).sum()
        loss.backward()
        opt.step()
        return loss

    jstep = dj.jit(step, check=3)
    for _ in range(3):
        jstep(dj.ones(2, 3))


def test_changed_global_number():
    global SCALE
    f = dj.jit(_scaled, check=2)
    f(_x())
    SCALE = 3.0
    try:
        with pytest.raises(dj.CheckError) as info:
            f(_x())
    finally:
        SCALE = 2.0
    text = str(info.value)
    assert _line(_scaled, "h * SCALE") in text and "mul" in text and "stale" in text
    assert "SCALE (float) = 2.0" in text  # the side-effect log says what was read
    assert isinstance(info.value, dj.DongjingError)


def test_python_random_call():
    with pytest.raises(dj.CheckError, match=_line(_rolled, "random.random()")):
        dj.check(_rolled, _x())


def _planted_rewrite(graph, fetches):
    """A deliberately wrong rewrite: tanh becomes sigmoid."""
    rb = Rebuilder(graph)
    changes = []
    for node in graph.nodes:
        if node.op.name == "tanh":
            rb.map[node] = rb.copy(node, op=OPS["sigmoid"])
            changes.append(f"%{node.name}: tanh -> sigmoid (planted)")
        else:
            rb.map[node] = rb.copy(node)
    return PassResult(*rb.finish(fetches), changes)


def test_planted_wrong_rewrite(monkeypatch):
    monkeypatch.setattr(pipeline, "CLEANUP", pipeline.CLEANUP + (_planted_rewrite,))
    with pytest.raises(dj.CheckError) as info:
        dj.check(_scaled, _x())
    text = str(info.value)
    assert _line(_scaled, "dj.tanh(x)") in text and "= tanh(" in text
    assert "_planted_rewrite" in text


def test_warn_mode_and_bad_settings():
    with pytest.warns(UserWarning, match="first diverging node"):
        out = dj.jit(_rolled, check="warn")(_x())
    assert out.shape == (2, 3)
    with pytest.raises(dj.JitError, match="check"):
        dj.jit(_scaled, check="loud")
