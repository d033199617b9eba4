"""Adamax, NAdam, RAdam, ASGD, Rprop, SparseAdam, Adafactor and Muon: by hand, eager == static
== jit, and against PyTorch over several steps."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing import optim
from dongjing.errors import ArgumentError

RNG = np.random.default_rng(0)
X = RNG.standard_normal((16, 4)).astype(np.float32)
Y = RNG.integers(0, 3, 16)
STEPS = 6

RULES = [
    ("Adamax", dict(lr=0.05, weight_decay=0.01)),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.9), maximize=True)),
    ("NAdam", dict(lr=0.05, weight_decay=0.01)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True,
                   momentum_decay=0.01)),
    ("RAdam", dict(lr=0.05, weight_decay=0.01)),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.5), weight_decay=0.1, decoupled_weight_decay=True)),
    ("ASGD", dict(lr=0.1, lambd=0.01, t0=2, weight_decay=0.01)),
    ("Rprop", dict(lr=0.05, etas=(0.4, 1.3), step_sizes=(1e-3, 0.1))),
    ("Rprop", dict(lr=0.05, maximize=True)),
    ("Adafactor", dict(lr=0.05)),
    ("Adafactor", dict(lr=0.05, weight_decay=0.1, d=2.0, beta2_decay=-0.5, eps=(1e-20, 1e-3))),
    ("SparseAdam", dict(lr=0.05)),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(RULES)]


def _model(bias=True):
    dj.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 6, bias=bias), nn.Tanh(), nn.Linear(6, 3, bias=bias))


def _batch(i):
    return dj.tensor(X[i:i + 8]), dj.tensor(Y[i:i + 8])


def _eager(model, opt, steps=STEPS):
    losses = []
    for i in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(*_batch(i)[:1]), _batch(i)[1])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("name,kwargs", RULES, ids=IDS)
def test_eager_static_and_jit_agree(name, kwargs):
    cls = getattr(optim, name)
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
              for i in range(STEPS)]
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

    jitted = [step(*_batch(i)).item() for i in range(STEPS)]
    np.testing.assert_allclose(jitted, eager, rtol=1e-5)


def test_adamax_and_rprop_by_hand():
    p = nn.Parameter(np.array([1.0, -2.0], np.float32))
    opt = optim.Adamax([p], lr=0.1, betas=(0.5, 0.9))
    p.grad = dj.tensor([2.0, -4.0])
    opt.step()  # m = 0.5 g, u = |g| + eps, lr / (1 - 0.5) = 0.2
    np.testing.assert_allclose(p.numpy(), [1 - 0.2 * 0.5, -2 + 0.2 * 0.5], rtol=1e-6)
    q = nn.Parameter(np.array([0.0, 0.0], np.float32))
    opt = optim.Rprop([q], lr=0.1, etas=(0.5, 2.0))
    for grad, expected in [([1.0, -1.0], [-0.1, 0.1]),     # first step: lr
                           ([1.0, 1.0], [-0.3, 0.1]),      # same sign grows, flip skips
                           ([1.0, 1.0], [-0.7, 0.05])]:    # the flipped one restarts at lr/2
        q.grad = dj.tensor(grad)
        opt.step()
        np.testing.assert_allclose(q.numpy(), expected, rtol=1e-6)


def test_sparse_adam_leaves_untouched_rows():
    emb = nn.Embedding(5, 3)
    before = emb.weight.numpy().copy()
    opt = optim.SparseAdam(emb.parameters(), lr=0.1)
    emb(dj.tensor([1, 3])).sum().backward()
    opt.step()
    after = emb.weight.numpy()
    np.testing.assert_array_equal(after[[0, 2, 4]], before[[0, 2, 4]])
    np.testing.assert_allclose(after[[1, 3]], before[[1, 3]] - 0.1, rtol=1e-5)


def test_muon_refuses_non_matrices_and_bad_settings():
    with pytest.raises(ValueError, match="2-d"):
        optim.Muon([nn.Parameter(np.zeros(3, np.float32))])
    with pytest.raises(ValueError, match="adjust_lr_fn"):
        optim.Muon([nn.Parameter(np.zeros((2, 2), np.float32))], adjust_lr_fn="x")
    with pytest.raises(ValueError, match="etas"):
        optim.Rprop([nn.Parameter(np.zeros(2, np.float32))], etas=(1.5, 1.2))
    with pytest.raises(ArgumentError, match="differentiable"):
        optim.NAdam([nn.Parameter(np.zeros(2, np.float32))], differentiable=True)


def test_muon_orthogonalizes_its_update():
    p = nn.Parameter(np.zeros((4, 6), np.float32))
    opt = optim.Muon([p], lr=1.0, weight_decay=0.0, momentum=0.0, nesterov=False,
                     ns_steps=12, ns_coefficients=(1.5, -0.5, 0.0))  # cubic: converges to 1
    p.grad = dj.tensor(RNG.standard_normal((4, 6)).astype(np.float32))
    opt.step()
    singular = np.linalg.svd(-p.numpy(), compute_uv=False)
    np.testing.assert_allclose(singular, np.ones(4), atol=1e-3)


# --- against PyTorch ---------------------------------------------------------------------
def _torch_model(torch, model, bias=True):
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 6, bias=bias), torch.nn.Tanh(),
                                 torch.nn.Linear(6, 3, bias=bias))
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    return theirs


def _torch_losses(torch, model, opt, steps=STEPS):
    losses = []
    for i in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(torch.tensor(X[i:i + 8])),
                                                 torch.tensor(Y[i:i + 8]))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("name,kwargs", [r for r in RULES if r[0] != "SparseAdam"],
                         ids=[i for i, r in zip(IDS, RULES) if r[0] != "SparseAdam"])
def test_rules_equal_pytorch(name, kwargs):
    torch = pytest.importorskip("torch")
    ours = _model()
    theirs = _torch_model(torch, ours)
    a = _eager(ours, getattr(optim, name)(ours.parameters(), **kwargs))
    b = _torch_losses(torch, theirs, getattr(torch.optim, name)(theirs.parameters(), **kwargs))
    np.testing.assert_allclose(a, b, rtol=1e-5)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_sparse_adam_equals_pytorch_on_a_sparse_embedding():
    torch = pytest.importorskip("torch")
    ours = nn.Embedding(6, 3)
    theirs = torch.nn.Embedding(6, 3, sparse=True)
    theirs.weight.data = torch.tensor(ours.weight.numpy())
    opt_a = optim.SparseAdam(ours.parameters(), lr=0.05, betas=(0.8, 0.9))
    opt_b = torch.optim.SparseAdam(theirs.parameters(), lr=0.05, betas=(0.8, 0.9))
    target = RNG.standard_normal((3, 3)).astype(np.float32)
    for ids in ([0, 2, 2], [1, 2, 5], [0, 0, 4], [3, 5, 1]):
        opt_a.zero_grad()
        opt_b.zero_grad()
        ((ours(dj.tensor(ids)) - dj.tensor(target)) ** 2).sum().backward()
        ((theirs(torch.tensor(ids)) - torch.tensor(target)) ** 2).sum().backward()
        opt_a.step()
        opt_b.step()
        np.testing.assert_allclose(ours.weight.numpy(), theirs.weight.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)


MUON = [dict(lr=0.02), dict(lr=0.02, nesterov=False, adjust_lr_fn="match_rms_adamw")]


@pytest.mark.parametrize("kwargs", MUON)
def test_muon_equals_pytorch_with_its_iteration_in_float32(kwargs, monkeypatch):
    """PyTorch runs the Newton-Schulz iteration in bfloat16: with that cast made a no-op,
    its own code and ours agree to float32 precision."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.Tensor, "bfloat16", lambda self: self.clone())
    ours = _model(bias=False)
    theirs = _torch_model(torch, ours, bias=False)
    a = _eager(ours, optim.Muon(ours.parameters(), **kwargs), steps=4)
    b = _torch_losses(torch, theirs, torch.optim.Muon(theirs.parameters(), **kwargs), steps=4)
    np.testing.assert_allclose(a, b, rtol=1e-5)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5)

