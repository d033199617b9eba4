"""Adadelta, Adagrad, ExponentialLR, MultiStepLR, OneCycleLR, ReduceLROnPlateau and
PyTorch-style custom optimizers: by hand, eager == static == jit, and against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing import optim
from dongjing.optim import lr_scheduler

RNG = np.random.default_rng(0)
X = RNG.standard_normal((16, 4)).astype(np.float32)
Y = RNG.integers(0, 3, 16)


def _model():
    dj.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))


def _eager(model, opt, steps=4, sched=None):
    losses = []
    for i in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(dj.tensor(X[i:i + 8])), dj.tensor(Y[i:i + 8]))
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        losses.append(loss.item())
    return losses


def test_adagrad_and_adadelta_by_hand():
    p = nn.Parameter(np.array([1.0, -2.0], np.float32))
    opt = optim.Adagrad([p], lr=0.5, initial_accumulator_value=1.0)
    p.grad = dj.tensor([3.0, 4.0])
    opt.step()
    np.testing.assert_allclose(p.numpy(), [1 - 0.5 * 3 / np.sqrt(10), -2 - 0.5 * 4 / np.sqrt(17)],
                               rtol=1e-6)
    q = nn.Parameter(np.array([1.0], np.float32))
    opt = optim.Adadelta([q], lr=1.0, rho=0.5, eps=1e-6)
    q.grad = dj.tensor([2.0])
    opt.step()
    v = 0.5 * 4.0
    delta = np.sqrt(1e-6) / np.sqrt(v + 1e-6) * 2.0
    np.testing.assert_allclose(q.numpy(), [1 - delta], rtol=1e-6)


RULES = [(optim.Adagrad, dict(lr=0.1, lr_decay=0.01, weight_decay=0.01)),
         (optim.Adadelta, dict(lr=1.0, rho=0.8, weight_decay=0.01))]


@pytest.mark.parametrize("cls,kwargs", RULES, ids=["Adagrad", "Adadelta"])
def test_new_rules_eager_static_and_jit_agree(cls, kwargs):
    eager_model = _model()
    eager = _eager(eager_model, cls(eager_model.parameters(), **kwargs))
    static_model = _model()
    opt = cls(static_model.parameters(), **kwargs)
    with dj.Graph() as g:
        x = dj.placeholder((None, 4))
        y = dj.placeholder((None,), dj.int64)
        loss = F.cross_entropy(static_model(x), y)
        train = opt.minimize(loss)
    sess = dj.Session(g)
    static = [float(sess.run([loss, train], {x: X[i:i + 8], y: Y[i:i + 8]})[0])
              for i in range(4)]
    np.testing.assert_allclose(static, eager, rtol=1e-5)
    jit_model = _model()
    jopt = cls(jit_model.parameters(), **kwargs)

    @dj.jit
    def step(xb, yb):
        jopt.zero_grad()
        out = F.cross_entropy(jit_model(xb), yb)
        out.backward()
        jopt.step()
        return out

    jitted = [step(dj.tensor(X[i:i + 8]), dj.tensor(Y[i:i + 8])).item() for i in range(4)]
    np.testing.assert_allclose(jitted, eager, rtol=1e-5)


class ClippedSGD(optim.Optimizer):
    """A custom optimizer as PyTorch tutorials write one: state[p] a defaultdict entry, the
    update in in-place tensor ops."""

    def __init__(self, params, lr=0.1, momentum=0.9):
        super().__init__(params, dict(lr=lr, momentum=momentum))

    @dj.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["buf"] = dj.zeros_like(p)
                state["step"] += 1
                buf = state["buf"]
                buf.mul_(group["momentum"])
                buf.add_(p.grad.clamp(-1.0, 1.0))
                p.sub_(buf * group["lr"])


def test_custom_optimizer_with_state_defaultdict(tmp_path):
    model = _model()
    opt = ClippedSGD(model.parameters())
    losses = _eager(model, opt, steps=6)
    assert losses[-1] < losses[0]
    first = next(iter(model.parameters()))
    assert opt.state[first]["step"] == 6
    dj.save(opt.state_dict(), tmp_path / "opt.dj")
    other = ClippedSGD(_model().parameters())
    other.load_state_dict(dj.load(tmp_path / "opt.dj"))
    restored = other.state[next(iter(other.param_groups[0]["params"]))]
    assert restored["step"] == 6
    np.testing.assert_array_equal(restored["buf"].numpy(), opt.state[first]["buf"].numpy())


def test_reduce_lr_on_plateau_by_hand():
    opt = optim.SGD([nn.Parameter(np.zeros(1, np.float32))], lr=1.0)
    sched = lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1, cooldown=1, min_lr=0.2)
    lrs = []
    for metric in [5, 4, 4, 4, 4, 4, 4, 4, 4, 4]:
        sched.step(metric)
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs == [1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.2]


def test_one_cycle_under_jit_does_not_retrace_and_equals_eager():
    def run(jit: bool):
        model = _model()
        opt = optim.Adam(model.parameters(), lr=0.01)
        sched = lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=6)

        def step(xb, yb):
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            return loss

        fn = dj.jit(step) if jit else step
        losses = []
        for i in range(6):
            losses.append(fn(dj.tensor(X[i:i + 8]), dj.tensor(Y[i:i + 8])).item())
            sched.step() if i < 5 else None
        return losses, fn

    eager, _ = run(False)
    jitted, fn = run(True)
    np.testing.assert_allclose(jitted, eager, rtol=1e-5)
    assert fn.cache_size == 1


def test_changing_a_baked_hyperparameter_of_a_static_train_op_raises():
    model = _model()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with dj.Graph():
        x = dj.placeholder((None, 4))
        opt.minimize(model(x).sum())
    opt.param_groups[0]["lr"] = 0.05  # read from a Variable: fine
    with pytest.raises(RuntimeError, match="momentum=0.9 as a constant"):
        opt.param_groups[0]["momentum"] = 0.5


# --- against PyTorch ---------------------------------------------------------------------
def _torch_model(torch, model):
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3))
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    return theirs


def _torch_losses(torch, model, opt, steps=4, sched=None):
    losses = []
    for i in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(torch.tensor(X[i:i + 8])),
                                                 torch.tensor(Y[i:i + 8]))
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("name,kwargs", [
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.01, initial_accumulator_value=0.1)),
    ("Adadelta", dict(lr=1.0, rho=0.8, weight_decay=0.01))])
def test_rules_equal_pytorch(name, kwargs):
    torch = pytest.importorskip("torch")
    ours = _model()
    theirs = _torch_model(torch, ours)
    a = _eager(ours, getattr(optim, name)(ours.parameters(), **kwargs))
    b = _torch_losses(torch, theirs, getattr(torch.optim, name)(theirs.parameters(), **kwargs))
    np.testing.assert_allclose(a, b, rtol=1e-5)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-6)


SCHEDULES = [
    ("ExponentialLR", dict(gamma=0.7), "SGD"),
    ("MultiStepLR", dict(milestones=[2, 5], gamma=0.5), "SGD"),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=10), "SGD"),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=10, three_phase=True,
                        anneal_strategy="linear"), "Adam"),
]


@pytest.mark.parametrize("name,kwargs,opt_name", SCHEDULES,
                         ids=["exp", "multistep", "onecycle", "onecycle-3-adam"])
def test_schedules_equal_pytorch(name, kwargs, opt_name):
    torch = pytest.importorskip("torch")
    opt_kwargs = dict(lr=0.1, momentum=0.9) if opt_name == "SGD" else dict(lr=0.1)
    ours = getattr(optim, opt_name)([nn.Parameter(np.zeros(1, np.float32))], **opt_kwargs)
    theirs = getattr(torch.optim, opt_name)([torch.zeros(1, requires_grad=True)], **opt_kwargs)
    s1 = getattr(lr_scheduler, name)(ours, **kwargs)
    s2 = getattr(torch.optim.lr_scheduler, name)(theirs, **kwargs)
    key = "momentum" if opt_name == "SGD" else "betas"
    for _ in range(9):
        ours.step()
        theirs.step()
        s1.step()
        s2.step()
        np.testing.assert_allclose(s1.get_last_lr(), s2.get_last_lr(), rtol=1e-9)
        np.testing.assert_allclose(np.ravel(ours.param_groups[0][key]),
                                   np.ravel(theirs.param_groups[0][key]), rtol=1e-9)


def test_reduce_lr_on_plateau_equals_pytorch():
    torch = pytest.importorskip("torch")
    ours = optim.SGD([nn.Parameter(np.zeros(1, np.float32))], lr=1.0)
    theirs = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    kwargs = dict(mode="max", factor=0.3, patience=2, threshold=0.1, threshold_mode="abs",
                  cooldown=1)
    s1 = lr_scheduler.ReduceLROnPlateau(ours, **kwargs)
    s2 = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs, **kwargs)
    for metric in [1.0, 1.05, 1.2, 1.2, 1.25, 1.1, 1.0, 1.4, 1.3, 1.3, 1.3, 1.3]:
        s1.step(metric)
        s2.step(metric)
        assert s1.get_last_lr() == pytest.approx(s2.get_last_lr())


def test_a_custom_in_place_step_refuses_a_jit_trace():
    model = _model()
    opt = ClippedSGD(model.parameters())

    @dj.jit
    def step(xb, yb):
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    with pytest.raises(dj.GraphError, match="ClippedSGD.step"):
        step(dj.tensor(X[:8]), dj.tensor(Y[:8]))
