"""dj.nn inside static graphs: one model object in both modes; dropout draws a fresh seeded mask
per run and is never merged or folded; batch norm eval reads the running statistics."""

from __future__ import annotations

import numpy as np

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F


def test_dropout_in_a_graph_is_random_per_run_seeded_and_not_merged():
    with dj.Graph() as g:
        x = dj.placeholder((None, 200), name="x")
        a = F.dropout(x, 0.5)
        b = F.dropout(x, 0.5)  # same op, same input: must stay a second draw
    feed = {x: np.ones((3, 200), np.float32)}
    for level in (0, 2):
        sess = dj.Session(g, optimize=level)
        dj.manual_seed(7)
        first_a, first_b = sess.run([a, b], feed)
        second_a, _ = sess.run([a, b], feed)
        assert not np.array_equal(first_a, first_b), f"dropouts merged at optimize={level}"
        assert not np.array_equal(first_a, second_a), f"mask reused at optimize={level}"
        assert set(np.unique(first_a)) == {0.0, 2.0}
        dj.manual_seed(7)
        np.testing.assert_array_equal(sess.run(a, feed), first_a)


def test_eval_mode_graph_uses_running_statistics_and_matches_eager():
    dj.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.5), nn.Linear(16, 3))
    x_np = np.random.default_rng(1).standard_normal((5, 1, 4, 4)).astype(np.float32)
    model(dj.tensor(x_np))  # one training-mode pass updates the running statistics
    model.eval()
    with dj.no_grad():
        eager = model(dj.tensor(x_np)).numpy()
    with dj.Graph() as g:
        x = dj.placeholder((None, 1, 4, 4), name="x")
        out = model(x)
    assert "running_mean" in str(g)
    for level in (0, 2):
        np.testing.assert_allclose(dj.Session(g, optimize=level).run(out, {x: x_np}), eager,
                                   rtol=1e-5, atol=1e-6)
