"""The standard loop with a jitted model: `model = dj.jit(model)`, eager loss, backward, step,
gives the losses and parameters of pure eager over 20 steps (MLP, a digits-sized CNN, a model
with BatchNorm and Dropout in train and eval mode; SGD with momentum and Adam)."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F

STEPS = 20


def _mlp():
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))


class _CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(4 * 4 * 4, 10))

    def forward(self, x):
        return self.classifier(self.features(x.reshape(-1, 1, 8, 8)))


def _bn_dropout():
    return nn.Sequential(nn.Linear(64, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3),
                         nn.Linear(32, 10))


def _data():
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((STEPS, 16, 64)).astype(np.float32)
    ys = rng.integers(0, 10, (STEPS, 16))
    return xs, ys


def _train(make, opt_name: str, jit: bool, eval_mode: bool = False):
    dj.manual_seed(0)
    model = make()
    if eval_mode:
        model.eval()
    params = list(model.parameters())
    if opt_name == "sgd":
        opt = dj.optim.SGD(params, lr=0.05, momentum=0.9)
    else:
        opt = dj.optim.Adam(params, lr=0.01)
    run = dj.jit(model) if jit else model
    losses = []
    for x, y in zip(*_data()):
        loss = F.cross_entropy(run(dj.tensor(x)), dj.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    state = [p.numpy().copy() for p in params] + [b.numpy().copy() for b in model.buffers()]
    return np.array(losses), state


@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
@pytest.mark.parametrize("make,eval_mode", [(_mlp, False), (_CNN, False), (_bn_dropout, False),
                                            (_bn_dropout, True)],
                         ids=["mlp", "cnn", "bn-dropout-train", "bn-dropout-eval"])
def test_jit_model_loop_equals_eager(make, eval_mode, opt_name):
    want_losses, want_state = _train(make, opt_name, False, eval_mode)
    got_losses, got_state = _train(make, opt_name, True, eval_mode)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-5)
    assert len(got_state) == len(want_state)
    for got, want in zip(got_state, want_state):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_dropout_draws_a_fresh_mask_each_call():
    dj.manual_seed(1)
    drop = dj.jit(nn.Dropout(0.5))
    x = dj.ones(64, requires_grad=True)
    a, b = drop(x), drop(x)
    assert not np.array_equal(a.numpy(), b.numpy())
    (a * 2.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * a.numpy())  # the mask of that call
