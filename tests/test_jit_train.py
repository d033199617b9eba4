"""Traced train steps: loss.backward(), opt.step(), opt.zero_grad() inside dj.jit give the same
losses, parameters, gradients and optimizer state as the same eager loop."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing.optim import SGD, Adam

RNG = np.random.default_rng(1)
X = RNG.standard_normal((40, 6)).astype(np.float32)
Y = RNG.integers(0, 4, 40)
BATCHES = [(0, 16), (16, 32), (32, 40), (0, 16), (16, 32)]  # the third one is smaller


def _model():
    dj.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 4))


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def _train_step(model, opt):
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


OPTIMIZERS = [(SGD, dict(lr=0.1, momentum=0.9)), (Adam, dict(lr=0.01))]


@pytest.mark.parametrize("opt_cls,kwargs", OPTIMIZERS, ids=["SGD-momentum", "Adam"])
def test_jitted_train_step_equals_eager_loop(opt_cls, kwargs):
    eager_model, jit_model = _model(), _model()
    eager_step = _train_step(eager_model, opt_cls(eager_model.parameters(), **kwargs))
    jit_opt = opt_cls(jit_model.parameters(), **kwargs)
    jit_step = dj.jit(_train_step(jit_model, jit_opt))
    for lo, hi in BATCHES:
        x, y = dj.tensor(X[lo:hi]), dj.tensor(Y[lo:hi])
        _close(jit_step(x, y).item(), eager_step(x, y).item())
        for p, q in zip(jit_model.parameters(), eager_model.parameters()):
            _close(p.numpy(), q.numpy())
            assert p.grad is not None and not p.grad.is_symbolic
            _close(p.grad.numpy(), q.grad.numpy())
    assert jit_step.cache_size == 2
    assert jit_step.retrace_reasons == ["arg 0: shape (16, 6) -> (8, 6); "
                                        "arg 1: shape (16,) -> (8,)"]
    state = next(iter(jit_opt.state.values()))
    assert all(v.item() == len(BATCHES) for k, v in state.items() if k == "step")


def test_zero_grad_at_the_end_leaves_no_grad():
    model = _model()
    opt = SGD(model.parameters(), lr=0.1)

    @dj.jit
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    before = [p.numpy().copy() for p in model.parameters()]
    step(X[:8], Y[:8])
    assert all(p.grad is None for p in model.parameters())
    assert any(not np.array_equal(b, p.numpy()) for b, p in zip(before, model.parameters()))


def test_gradients_accumulate_across_calls_like_eager():
    eager_model, jit_model = _model(), _model()

    def accumulate(model):
        def f(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            return loss
        return f

    eager, jitted = accumulate(eager_model), dj.jit(accumulate(jit_model))
    for lo, hi in BATCHES[:2] + BATCHES[:2]:
        jitted(X[lo:hi], Y[lo:hi])
        eager(dj.tensor(X[lo:hi]), dj.tensor(Y[lo:hi]))
    for p, q in zip(jit_model.parameters(), eager_model.parameters()):
        _close(p.grad.numpy(), q.grad.numpy())
    # 1st call: no .grad yet; 2nd: .grad present -> one retrace, fed the eager .grad since
    assert jitted.cache_size == 2
    assert jitted.retrace_reasons[0].startswith(".grad of ")
    assert "(12, 6): None -> a tensor" in jitted.retrace_reasons[0]


def test_no_symbolic_grad_is_left_on_parameters():
    model = _model()
    opt = SGD(model.parameters(), lr=0.1)

    @dj.jit(convert=False)  # converted, the `if` would become a dj.cond
    def broken(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if loss > 1:  # fails after backward: the trace is abandoned
            pass
        return loss

    with pytest.raises(dj.GraphError, match="dj.cond"):
        broken(X[:4], Y[:4])
    assert all(p.grad is None for p in model.parameters())
    assert model[0].weight.grad is None  # the grad scope is gone: reads are eager again


def test_changing_the_learning_rate_takes_effect():
    eager_model, jit_model = _model(), _model()
    eager_opt, jit_opt = SGD(eager_model.parameters(), lr=0.1), SGD(jit_model.parameters(), lr=0.1)
    eager_step, jit_step = _train_step(eager_model, eager_opt), dj.jit(_train_step(jit_model,
                                                                                 jit_opt))
    for lr in (0.1, 0.05, 0.01):  # read at run time (a Variable) or a retrace: either is right
        eager_opt.param_groups[0]["lr"] = jit_opt.param_groups[0]["lr"] = lr
        _close(jit_step(X[:8], Y[:8]).item(), eager_step(dj.tensor(X[:8]), dj.tensor(Y[:8])).item())
    for p, q in zip(jit_model.parameters(), eager_model.parameters()):
        _close(p.numpy(), q.numpy())


def test_changing_a_hyperparameter_retraces():
    model = _model()
    opt = SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = dj.jit(_train_step(model, opt))
    step(X[:8], Y[:8])
    opt.param_groups[0]["momentum"] = 0.5
    step(X[:8], Y[:8])
    assert step.retrace_reasons == ["optimizer SGD: hyperparameters group 0 momentum 0.9 -> 0.5"]


def test_backward_of_a_symbolic_tensor_outside_jit_points_to_it():
    with dj.Graph():
        x = dj.placeholder((3,))
        with pytest.raises(dj.GraphError, match="dj.jit"):
            (x * x).sum().backward()


def test_forward_after_step_in_one_call_warns():
    model = _model()
    opt = SGD(model.parameters(), lr=0.1)

    @dj.jit
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return model(x)

    with pytest.warns(UserWarning, match="read after an update"):
        step(X[:4], Y[:4])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _train_step(model, opt)  # an ordinary step builds nothing to warn about
        dj.jit(_train_step(model, opt))(X[:4], Y[:4])


def test_interpreted_train_step_equals_compiled():
    models = [_model(), _model()]
    steps = [dj.jit(_train_step(m, SGD(m.parameters(), lr=0.1, momentum=0.9)), optimize=level)
             for m, level in zip(models, (0, 2))]
    for lo, hi in BATCHES[:3]:
        losses = [s(X[lo:hi], Y[lo:hi]).item() for s in steps]
        _close(losses[0], losses[1])
    assert steps[0].source(X[:16], Y[:16]) is None  # the interpreter generates no code
    for p, q in zip(*(m.parameters() for m in models)):
        _close(p.numpy(), q.numpy())


def test_dj_grad_inside_a_trace():
    w = dj.Variable(np.array([1.0, 2.0], np.float32))

    @dj.jit
    def f(x):
        (g,) = dj.grad((x * w * w).sum(), w)
        return g

    assert f(dj.tensor([1.0, 3.0])).tolist() == [2.0, 12.0]
    assert w.grad is None


def test_reading_and_setting_grad_inside_the_trace():
    def clipped_step(model, opt):
        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward(retain_graph=True)
            loss.backward()  # a second backward accumulates, as eagerly
            for p in model.parameters():
                p.grad = dj.clip(p.grad, -0.02, 0.02)
            opt.step()
            return loss
        return step

    eager_model, jit_model = _model(), _model()
    eager_step = clipped_step(eager_model, SGD(eager_model.parameters(), lr=0.5))
    jit_step = dj.jit(clipped_step(jit_model, SGD(jit_model.parameters(), lr=0.5)))
    for lo, hi in BATCHES[:2]:
        eager_loss = eager_step(dj.tensor(X[lo:hi]), dj.tensor(Y[lo:hi]))
        _close(jit_step(X[lo:hi], Y[lo:hi]).item(), eager_loss.item())
    for p, q in zip(jit_model.parameters(), eager_model.parameters()):
        _close(p.numpy(), q.numpy())
        _close(p.grad.numpy(), q.grad.numpy())
        assert np.abs(p.grad.numpy()).max() <= 0.02
