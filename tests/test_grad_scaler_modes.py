"""GradScaler in the three modes: an eager loop, the same step under dj.jit (the inf check, the
skipped update and the scale's adaptation run as graph ops) and a static graph's
`GradScaler.minimize` train op at every optimization level agree bit for bit, with an
overflowing step in the middle."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.errors import GraphError

F = dj.nn.functional
FACTORS = [1.0, 1.0, float("inf"), 1.0, float("nan"), 1.0, 1.0]


def _setup(optimizer="sgd"):
    dj.manual_seed(0)
    model = dj.nn.Sequential(dj.nn.Linear(4, 8), dj.nn.ReLU(), dj.nn.Linear(8, 3))
    if optimizer == "sgd":
        opt = dj.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    else:
        opt = dj.optim.Adam(model.parameters(), lr=1e-2)
    scaler = dj.amp.GradScaler("cpu", init_scale=2.0 ** 4, growth_interval=2)
    return model, opt, scaler


def _data():
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((5, 4)).astype(np.float32) for _ in FACTORS]
    ys = [rng.integers(0, 3, 5) for _ in FACTORS]
    return xs, ys


def _step(model, opt, scaler, x, y, factor):
    opt.zero_grad()
    with dj.autocast("cpu"):
        loss = F.cross_entropy(model(x), y) * factor
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return loss


def _eager(optimizer):
    model, opt, scaler = _setup(optimizer)
    record = []
    for x, y, f in zip(*_data(), FACTORS):
        loss = _step(model, opt, scaler, dj.tensor(x), dj.tensor(y), dj.tensor(f))
        record.append((float(loss), scaler.get_scale()))
    return record, [p.detach().numpy().copy() for p in model.parameters()]


def _same(a, b):
    assert [s for _, s in a[0]] == [s for _, s in b[0]]
    np.testing.assert_array_equal([v for v, _ in a[0]], [v for v, _ in b[0]])
    for p, q in zip(a[1], b[1]):
        np.testing.assert_array_equal(p, q)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_eager_scaler_skips_overflowing_steps_and_adapts_the_scale(optimizer):
    record, _ = _eager(optimizer)
    scales = [s for _, s in record]
    assert scales == [16.0, 32.0, 16.0, 16.0, 8.0, 8.0, 16.0]  # growth_interval=2


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_jitted_train_step_matches_the_eager_loop(optimizer):
    expected = _eager(optimizer)
    model, opt, scaler = _setup(optimizer)
    step = dj.jit(lambda x, y, f: _step(model, opt, scaler, x, y, f))
    record = []
    for x, y, f in zip(*_data(), FACTORS):
        loss = step(dj.tensor(x), dj.tensor(y), dj.tensor(f))
        record.append((float(loss), scaler.get_scale()))
    assert step.cache_size == 1  # the scale is read by reference: no retrace as it changes
    _same(expected, (record, [p.detach().numpy() for p in model.parameters()]))


@pytest.mark.parametrize("level", [0, 1, 2])
def test_a_static_train_op_matches_the_eager_loop(level):
    expected = _eager("sgd")
    model, opt, scaler = _setup("sgd")
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, [None, 4])
        y = dj.placeholder(dj.int64, [None])
        f = dj.placeholder(dj.float32, [])
        with dj.autocast("cpu"):
            loss = F.cross_entropy(model(x), y) * f
        train = scaler.minimize(opt, loss)
    sess = dj.Session(g, optimize=level)
    record = []
    for xv, yv, fv in zip(*_data(), FACTORS):
        value, _ = sess.run([loss, train], {x: xv, y: yv, f: np.float32(fv)})
        record.append((float(value), scaler.get_scale()))
    _same(expected, (record, [p.detach().numpy() for p in model.parameters()]))


def test_state_dict_round_trip_and_an_explicit_new_scale():
    _, opt, scaler = _setup()
    scaler.update(new_scale=128.0)
    assert scaler.get_scale() == 128.0
    state = scaler.state_dict()
    other = dj.amp.GradScaler("cpu")
    other.load_state_dict(state)
    assert other.get_scale() == 128.0 and other.state_dict() == state


def test_minimize_refuses_an_eager_loss():
    model, opt, scaler = _setup()
    with pytest.raises(GraphError, match="symbolic loss"):
        scaler.minimize(opt, model(dj.ones(1, 4)).sum())
