"""An MLP with softmax cross-entropy: the same loss and gradients eagerly and through
Session.run(dj.gradients(...)), over batches of several sizes fed to one None-batch placeholder;
a graph train step updates the nn.Module's parameters in place."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F

SIZES = (4, 7, 1, 12)
RTOL = 1e-5


def _batch(n, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 5)).astype(np.float32), rng.integers(0, 3, n)


def _model():
    dj.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3))


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-6 * np.abs(b).max())


LEVELS = pytest.mark.parametrize("level", [0, 1, 2], ids=["interpreted", "cleaned", "compiled"])


@LEVELS
def test_nn_mlp_loss_and_gradients_eager_equal_static(level):
    model = _model()
    params = list(model.parameters())
    with dj.Graph() as g:
        x = dj.placeholder((None, 5), name="x")
        y = dj.placeholder((None,), dj.int64, name="y")
        loss = F.cross_entropy(model(x), y)
        grads = dj.gradients(loss, params)
    assert x.shape == (None, 5) and loss.shape == ()
    sess = dj.Session(g, optimize=level)
    for seed, n in enumerate(SIZES):
        xb, yb = _batch(n, seed)
        static_loss, *static_grads = sess.run([loss, *grads], {x: xb, y: yb})
        model.zero_grad()
        eager_loss = F.cross_entropy(model(dj.tensor(xb)), dj.tensor(yb))
        eager_loss.backward()
        _close(static_loss, eager_loss.numpy())
        for p, sg in zip(params, static_grads):
            _close(sg, p.grad.numpy())


def _plain_mlp(x, onehot, w1, b1, w2, b2):
    """Variables, matmul, relu, log_softmax and a one-hot (works for a None batch dim)."""
    h = dj.relu(x @ w1 + b1)
    logp = dj.log_softmax(h @ w2 + b2, dim=1)
    return -(logp * onehot).sum() / dj.sum(onehot)


@LEVELS
def test_variable_mlp_loss_and_gradients_eager_equal_static(level):
    rng = np.random.default_rng(1)
    shapes = [(5, 16), (16,), (16, 3), (3,)]
    variables = [dj.Variable(rng.standard_normal(s).astype(np.float32) * 0.5, name=f"v{i}")
                 for i, s in enumerate(shapes)]
    with dj.Graph() as g:
        x = dj.placeholder((None, 5), name="x")
        onehot = dj.placeholder((None, 3), name="onehot")
        loss = _plain_mlp(x, onehot, *variables)
        grads = dj.gradients(loss, variables)
    sess = dj.Session(g, optimize=level)
    for seed, n in enumerate(SIZES):
        xb, yb = _batch(n, seed)
        hot = np.eye(3, dtype=np.float32)[yb]
        static_loss, *static_grads = sess.run([loss, *grads], {x: xb, onehot: hot})
        for v in variables:
            v.grad = None
        eager_loss = _plain_mlp(dj.tensor(xb), dj.tensor(hot), *variables)
        eager_loss.backward()
        _close(static_loss, eager_loss.numpy())
        for v, sg in zip(variables, static_grads):
            _close(sg, v.grad.numpy())


def test_graph_training_updates_the_module_in_place():
    model = _model()
    before = [p.numpy().copy() for p in model.parameters()]
    with dj.Graph() as g:
        x = dj.placeholder((None, 5), name="x")
        y = dj.placeholder((None,), dj.int64, name="y")
        loss = F.cross_entropy(model(x), y)
        params = list(model.parameters())
        grads = dj.gradients(loss, params)
        train = dj.group(*[dj.assign(p, p - 0.5 * gp) for p, gp in zip(params, grads)])
    sess = dj.Session(g)
    xb, yb = _batch(32, 9)
    losses = [float(sess.run([loss, train], {x: xb, y: yb})[0]) for _ in range(20)]
    assert losses[-1] < losses[0] * 0.8
    assert all(not np.array_equal(b, p.numpy()) for b, p in zip(before, model.parameters()))
    eager_loss = F.cross_entropy(model(dj.tensor(xb)), dj.tensor(yb)).item()
    _close(eager_loss, sess.run(loss, {x: xb, y: yb}))
