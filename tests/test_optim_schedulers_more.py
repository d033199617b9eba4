"""ConstantLR, LinearLR, MultiplicativeLR, PolynomialLR, CosineAnnealingWarmRestarts and
CyclicLR against PyTorch's (the lr, and the cycled momentum, at every step), and by hand."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing.nn as nn
from dongjing import optim
from dongjing.optim import lr_scheduler

CASES = [
    ("ConstantLR", dict(factor=0.25, total_iters=3), "SGD"),
    ("LinearLR", dict(start_factor=0.2, end_factor=0.9, total_iters=4), "SGD"),
    ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.9 if e % 2 else 0.95), "Adam"),
    ("PolynomialLR", dict(total_iters=6, power=2.0), "SGD"),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, eta_min=0.01), "SGD"),
    ("CosineAnnealingWarmRestarts", dict(T_0=2, T_mult=2), "Adam"),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3), "SGD"),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, step_size_down=4,
                      mode="triangular2"), "SGD"),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, mode="exp_range",
                      gamma=0.9), "Adam"),
]


@pytest.mark.parametrize("name,kwargs,opt_name", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_schedules_equal_pytorch(name, kwargs, opt_name):
    torch = pytest.importorskip("torch")
    opt_kwargs = dict(lr=0.1, momentum=0.9) if opt_name == "SGD" else dict(lr=0.1)
    ours = getattr(optim, opt_name)([nn.Parameter(np.zeros(1, np.float32))], **opt_kwargs)
    theirs = getattr(torch.optim, opt_name)([torch.zeros(1, requires_grad=True)], **opt_kwargs)
    s1 = getattr(lr_scheduler, name)(ours, **kwargs)
    s2 = getattr(torch.optim.lr_scheduler, name)(theirs, **kwargs)
    key = "momentum" if opt_name == "SGD" else "betas"
    for _ in range(14):
        np.testing.assert_allclose(s1.get_last_lr(), s2.get_last_lr(), rtol=1e-9)
        np.testing.assert_allclose(np.ravel(ours.param_groups[0][key]),
                                   np.ravel(theirs.param_groups[0][key]), rtol=1e-9)
        ours.step()
        theirs.step()
        s1.step()
        s2.step()


def test_by_hand():
    opt = optim.SGD([nn.Parameter(np.zeros(1, np.float32))], lr=1.0)
    sched = lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
    lrs = []
    for _ in range(7):
        lrs.append(opt.param_groups[0]["lr"])
        sched.step()
    quarter = (1 + np.cos(np.pi / 4)) / 2  # periods 2, then 4, then 8
    np.testing.assert_allclose(lrs, [1.0, 0.5, 1.0, quarter, 0.5, 1 - quarter, 1.0])
    with pytest.raises(ValueError, match="cycle_momentum"):
        lr_scheduler.CyclicLR(optim.Adagrad([nn.Parameter(np.zeros(1, np.float32))]), 0.1, 1.0)
