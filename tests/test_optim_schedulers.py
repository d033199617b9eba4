"""Learning-rate schedulers: the lr sequence each produces."""

from __future__ import annotations

import math

import numpy as np

import dongjing as dj
from dongjing.optim import SGD, lr_scheduler


def _lrs(make_sched, epochs=7, lr=0.1):
    opt = SGD([dj.nn.Parameter(dj.ones(1))], lr=lr)
    sched = make_sched(opt)
    out = []
    for _ in range(epochs):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert sched.get_last_lr() == [opt.param_groups[0]["lr"]]
    return out


def test_step_lr():
    got = _lrs(lambda o: lr_scheduler.StepLR(o, step_size=3, gamma=0.5))
    np.testing.assert_allclose(got, [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025])


def test_cosine_annealing_lr():
    got = _lrs(lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=4, eta_min=0.01), epochs=5)
    want = [0.01 + 0.09 * (1 + math.cos(math.pi * t / 4)) / 2 for t in range(5)]
    np.testing.assert_allclose(got, want)
    assert got[-1] == 0.01


def test_lambda_lr_per_group():
    a, b = dj.nn.Parameter(dj.ones(1)), dj.nn.Parameter(dj.ones(1))
    opt = SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1)
    sched = lr_scheduler.LambdaLR(opt, [lambda e: 0.5**e, lambda e: 1.0 / (e + 1)])
    sched.step()
    sched.step()
    np.testing.assert_allclose(sched.get_last_lr(), [0.025, 1.0 / 3])
    assert sched.state_dict()["last_epoch"] == 2
