"""Against PyTorch, where installed: a PyTorch state dict converted to arrays loads as is and
gives the same outputs; layers, losses and optimizers agree step for step."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F

torch = pytest.importorskip("torch")
tnn = torch.nn


def _models():
    ours = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, stride=2, padding=1),
                         nn.AvgPool2d(2), nn.Flatten(), nn.Linear(6, 5), nn.LayerNorm(5),
                         nn.GELU(), nn.Linear(5, 3))
    theirs = tnn.Sequential(tnn.Conv2d(1, 4, 3, padding=1), tnn.BatchNorm2d(4), tnn.ReLU(),
                            tnn.MaxPool2d(2), tnn.Conv2d(4, 6, 3, stride=2, padding=1),
                            tnn.AvgPool2d(2), tnn.Flatten(), tnn.Linear(6, 5), tnn.LayerNorm(5),
                            tnn.GELU(), tnn.Linear(5, 3))
    return ours, theirs


def test_pytorch_state_dict_loads_as_is_and_outputs_agree():
    ours, theirs = _models()
    torch_state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    assert list(ours.state_dict()) == list(torch_state)
    ours.load_state_dict(torch_state)
    x = np.random.default_rng(0).standard_normal((3, 1, 8, 8)).astype(np.float32)
    y = np.array([0, 2, 1])
    out = ours(dj.tensor(x))
    loss = F.cross_entropy(out, dj.tensor(y), label_smoothing=0.1)
    loss.backward()
    tx = torch.tensor(x)
    tout = theirs(tx)
    tloss = torch.nn.functional.cross_entropy(tout, torch.tensor(y), label_smoothing=0.1)
    tloss.backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
    for (name, p), tp in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-3, atol=1e-5,
                                   err_msg=name)
    for (name, b), tb in zip(ours.named_buffers(), theirs.buffers()):
        np.testing.assert_allclose(b.numpy(), tb.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


OPTIMIZERS = [
    (dj.optim.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1,
                                         weight_decay=0.01)),
    (dj.optim.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
    (dj.optim.Adam, torch.optim.Adam, dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    (dj.optim.AdamW, torch.optim.AdamW, dict(lr=0.01, betas=(0.8, 0.99))),
    (dj.optim.RMSprop, torch.optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True)),
]


@pytest.mark.parametrize("ours,theirs,kwargs", OPTIMIZERS,
                         ids=[f"{o[0].__name__}-{i}" for i, o in enumerate(OPTIMIZERS)])
def test_optimizers_match_pytorch(ours, theirs, kwargs):
    rng = np.random.default_rng(1)
    p0 = rng.standard_normal((4, 3))
    p = nn.Parameter(dj.tensor(p0, dtype=dj.float64))
    tp = torch.tensor(p0, requires_grad=True)
    opt, topt = ours([p], **kwargs), theirs([tp], **kwargs)
    sched = dj.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5)
    tsched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=5)
    for _ in range(5):
        g = rng.standard_normal((4, 3))
        p.grad = dj.tensor(g, dtype=dj.float64)
        tp.grad = torch.tensor(g)
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-7, atol=1e-9)
    assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr())


def test_step_and_lambda_schedules_match_pytorch():
    for make, tmake in [
        (lambda o: dj.optim.lr_scheduler.StepLR(o, 2, 0.3),
         lambda o: torch.optim.lr_scheduler.StepLR(o, 2, 0.3)),
        (lambda o: dj.optim.lr_scheduler.LambdaLR(o, lambda e: 1 / (1 + e)),
         lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda e: 1 / (1 + e))),
    ]:
        opt = dj.optim.SGD([nn.Parameter(dj.ones(1))], lr=0.5)
        topt = torch.optim.SGD([torch.ones(1, requires_grad=True)], lr=0.5)
        sched, tsched = make(opt), tmake(topt)
        for _ in range(6):
            opt.step()
            topt.step()
            sched.step()
            tsched.step()
            assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr())


def test_losses_match_pytorch():
    rng = np.random.default_rng(2)
    z, t = rng.standard_normal((5, 4)), rng.uniform(size=(5, 4))
    y = np.array([3, 0, 1, 1, 2])
    zt, tt = torch.tensor(z), torch.tensor(t)
    pw = np.array([0.5, 1.0, 2.0, 3.0])
    pairs = [
        (F.nll_loss(F.log_softmax(dj.tensor(z, dtype=dj.float64), 1), dj.tensor(y)),
         torch.nn.functional.nll_loss(torch.log_softmax(zt, 1), torch.tensor(y))),
        (F.binary_cross_entropy_with_logits(dj.tensor(z, dtype=dj.float64),
                                            dj.tensor(t, dtype=dj.float64),
                                            pos_weight=dj.tensor(pw, dtype=dj.float64)),
         torch.nn.functional.binary_cross_entropy_with_logits(zt, tt,
                                                              pos_weight=torch.tensor(pw))),
        (F.cross_entropy(dj.tensor(z, dtype=dj.float64), dj.tensor(t, dtype=dj.float64),
                         reduction="sum"),
         torch.nn.functional.cross_entropy(zt, tt, reduction="sum")),
    ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-10)
