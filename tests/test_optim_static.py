"""optimizer.minimize in a static graph: the same rule as eager step(), so the same losses;
state persists across runs as Variables; batch-norm statistics update through the train op."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing.optim import SGD, Adam, AdamW, RMSprop

RNG = np.random.default_rng(0)
X = RNG.standard_normal((12, 4)).astype(np.float32)
Y = RNG.integers(0, 3, 12)


def _model():
    dj.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 3))


OPTIMIZERS = [
    (SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)),
    (Adam, dict(lr=0.01, amsgrad=True)),
    (AdamW, dict(lr=0.01)),
    (RMSprop, dict(lr=0.01, momentum=0.5, centered=True)),
]


@pytest.mark.parametrize("opt_cls,kwargs", OPTIMIZERS, ids=[o[0].__name__ for o in OPTIMIZERS])
def test_minimize_matches_eager_step(opt_cls, kwargs):
    eager_model, static_model = _model(), _model()
    opt = opt_cls(eager_model.parameters(), **kwargs)
    eager = []
    for i in range(4):
        xb, yb = dj.tensor(X[i:i + 8]), dj.tensor(Y[i:i + 8])
        loss = F.cross_entropy(eager_model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        eager.append(loss.item())

    opt = opt_cls(static_model.parameters(), **kwargs)
    with dj.Graph() as g:
        x = dj.placeholder((None, 4), name="x")
        y = dj.placeholder((None,), dj.int64, name="y")
        loss = F.cross_entropy(static_model(x), y)
        train = opt.minimize(loss)
    sess = dj.Session(g)
    static = [float(sess.run([loss, train], {x: X[i:i + 8], y: Y[i:i + 8]})[0])
              for i in range(4)]
    np.testing.assert_allclose(static, eager, rtol=1e-5)
    for (name, a), (_, b) in zip(eager_model.state_dict().items(),
                                 static_model.state_dict().items()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)
    assert static_model[1].num_batches_tracked.item() == 4


def test_minimize_without_params_uses_the_graphs_trainable_variables():
    w = dj.Variable(np.array([2.0], np.float32), name="w")
    with dj.Graph() as g:
        loss = (w * 3.0 - 1.0) ** 2
        train = dj.optim.SGD(None, lr=0.01).minimize(loss)
    dj.Session(g).run(train)
    np.testing.assert_allclose(w.numpy(), [2.0 - 0.01 * 2 * 5 * 3], rtol=1e-6)


def test_minimize_needs_a_symbolic_loss():
    p = nn.Parameter(dj.ones(2))
    with pytest.raises(dj.GraphError, match="symbolic loss"):
        SGD([p], lr=0.1).minimize((p * p).sum())


def test_scheduled_learning_rate_reaches_the_built_train_op():
    def run(static: bool):
        model = _model()
        opt = SGD(model.parameters(), lr=0.2, momentum=0.5)
        sched = dj.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        if static:
            with dj.Graph() as g:
                x = dj.placeholder((None, 4))
                y = dj.placeholder((None,), dj.int64)
                loss = F.cross_entropy(model(x), y)
                train = opt.minimize(loss)
            sess = dj.Session(g)
        losses = []
        for _ in range(3):
            if static:
                losses.append(float(sess.run([loss, train], {x: X, y: Y})[0]))
            else:
                out = F.cross_entropy(model(dj.tensor(X)), dj.tensor(Y))
                opt.zero_grad()
                out.backward()
                opt.step()
                losses.append(out.item())
            sched.step()
        return losses, model[0].weight.numpy()

    (eager, w_eager), (static, w_static) = run(False), run(True)
    np.testing.assert_allclose(static, eager, rtol=1e-6)
    np.testing.assert_allclose(w_static, w_eager, rtol=1e-5, atol=1e-7)


def test_minimize_with_nothing_to_train_says_so():
    with dj.Graph():
        x = dj.placeholder((2,))
        loss = (x * x).sum()
        with pytest.raises(dj.GraphError, match="no trainable Variable"):
            SGD(None, lr=0.1).minimize(loss)
