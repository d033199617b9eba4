"""dj.nn inside static graphs: one model object in both modes; dropout draws a fresh seeded mask
per run and is never merged or folded; batch norm eval reads the running statistics."""

from __future__ import annotations

import numpy as np
import pytest

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


def _bn_model():
    dj.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))


X = np.random.default_rng(2).standard_normal((10, 4)).astype(np.float32)
Y = np.random.default_rng(3).integers(0, 3, 10)


def test_batchnorm_updates_without_an_optimizer_via_update_ops():
    eager, static = _bn_model(), _bn_model()
    eager(dj.tensor(X))
    with dj.Graph() as g:
        x = dj.placeholder((None, 4))
        out = static(x)
        updates = dj.nn.update_ops(g)
    assert len(updates) == 3  # running_mean, running_var, num_batches_tracked
    dj.Session(g).run([out, updates], {x: X})
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(static[1], name).numpy(),
                                   getattr(eager[1], name).numpy(), rtol=1e-6, err_msg=name)


def test_jit_training_step_with_batchnorm_matches_eager():
    if not hasattr(dj, "jit"):
        pytest.skip("dj.jit is not available")
    results = []
    for use_jit in (False, True):
        model = _bn_model()
        opt = dj.optim.Adam(model.parameters(), lr=0.01)

        def step(x, y, model=model, opt=opt):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss

        fn = dj.jit(step) if use_jit else step
        losses = [float(fn(dj.tensor(X), dj.tensor(Y))) for _ in range(3)]
        results.append((losses, model[1].running_mean.numpy().copy(), model[3].weight.numpy()))
    (le, re_, we), (lj, rj, wj) = results
    np.testing.assert_allclose(lj, le, rtol=1e-6)
    np.testing.assert_allclose(rj, re_, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(wj, we, rtol=1e-5, atol=1e-7)
