"""examples/user_speed.py, short: each way it times a training step (eager, dj.jit, a static
graph) runs on small inputs, and the RNN's steps give finite losses."""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np

_PATH = os.path.join(os.path.dirname(__file__), os.pardir, "examples", "user_speed.py")
_spec = importlib.util.spec_from_file_location("user_speed_example", _PATH)
user_speed = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = user_speed
_spec.loader.exec_module(user_speed)


def test_every_way_of_stepping_runs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 64)).astype(np.float32)
    y = rng.integers(0, 10, 8)
    steps = user_speed.mlp_steps(x, y)
    assert set(steps) == {"eager", "dj.jit", "static"}
    for step in steps.values():
        for _ in range(2):
            step()
    rnn = user_speed.rnn_steps(rng.standard_normal((3, 4, 32)).astype(np.float32))
    assert set(rnn) == {"eager", "dj.jit"}
    losses = [float(rnn["eager"]()), float(rnn["dj.jit"]())]
    assert np.isfinite(losses).all()
    assert user_speed.median_ms(lambda: None, 3) >= 0.0
