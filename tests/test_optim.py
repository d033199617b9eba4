"""Optimizers: the first steps of each against its published update rule in NumPy (float64);
parameter groups, zero_grad, state dicts."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.errors import StateDictError
from dongjing.optim import SGD, Adam, AdamW, RMSprop

STEPS = 4


def _grads(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((3, 2)) for _ in range(STEPS)]


def _run(make, p0, grads):
    """Apply `grads` one after another through an optimizer; parameter after each step."""
    p = dj.nn.Parameter(dj.tensor(p0, dtype=dj.float64))
    opt = make([p])
    out = []
    for g in grads:
        p.grad = dj.tensor(g, dtype=dj.float64)
        opt.step()
        out.append(p.numpy().copy())
    return out, opt


def _sgd_ref(p, grads, lr, momentum=0.0, dampening=0.0, wd=0.0, nesterov=False):
    out, buf = [], None
    for t, g in enumerate(grads):
        g = g + wd * p
        if momentum:
            buf = g.copy() if t == 0 else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
        out.append(p)
    return out


def _adam_ref(p, grads, lr, b1, b2, eps, wd=0.0, decoupled=False, amsgrad=False):
    out, m, v, vmax = [], 0 * p, 0 * p, 0 * p
    for t, g in enumerate(grads, start=1):
        if decoupled:
            p = p * (1 - lr * wd)
        else:
            g = g + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        vv = vmax if amsgrad else v
        p = p - lr * (m / (1 - b1**t)) / (np.sqrt(vv / (1 - b2**t)) + eps)
        out.append(p)
    return out


def _rmsprop_ref(p, grads, lr, alpha, eps, wd=0.0, momentum=0.0, centered=False):
    out, v, ga, buf = [], 0 * p, 0 * p, 0 * p
    for g in grads:
        g = g + wd * p
        v = alpha * v + (1 - alpha) * g * g
        vt = v
        if centered:
            ga = alpha * ga + (1 - alpha) * g
            vt = v - ga * ga
        if momentum:
            buf = momentum * buf + g / (np.sqrt(vt) + eps)
            p = p - lr * buf
        else:
            p = p - lr * g / (np.sqrt(vt) + eps)
        out.append(p)
    return out


P0 = np.random.default_rng(9).standard_normal((3, 2))

CASES = [
    ("sgd", lambda ps: SGD(ps, lr=0.1), lambda p, g: _sgd_ref(p, g, 0.1)),
    ("sgd momentum dampening wd", lambda ps: SGD(ps, lr=0.1, momentum=0.9, dampening=0.3,
                                                 weight_decay=0.01),
     lambda p, g: _sgd_ref(p, g, 0.1, 0.9, 0.3, 0.01)),
    ("sgd nesterov", lambda ps: SGD(ps, lr=0.05, momentum=0.8, nesterov=True),
     lambda p, g: _sgd_ref(p, g, 0.05, 0.8, nesterov=True)),
    ("adam", lambda ps: Adam(ps, lr=0.01), lambda p, g: _adam_ref(p, g, 0.01, 0.9, 0.999, 1e-8)),
    ("adam l2 amsgrad", lambda ps: Adam(ps, lr=0.02, betas=(0.8, 0.9), weight_decay=0.1,
                                        amsgrad=True),
     lambda p, g: _adam_ref(p, g, 0.02, 0.8, 0.9, 1e-8, wd=0.1, amsgrad=True)),
    ("adamw", lambda ps: AdamW(ps, lr=0.01), lambda p, g: _adam_ref(p, g, 0.01, 0.9, 0.999, 1e-8,
                                                                     wd=0.01, decoupled=True)),
    ("rmsprop", lambda ps: RMSprop(ps, lr=0.01), lambda p, g: _rmsprop_ref(p, g, 0.01, 0.99, 1e-8)),
    ("rmsprop centered momentum", lambda ps: RMSprop(ps, lr=0.01, momentum=0.9, centered=True,
                                                     weight_decay=0.1),
     lambda p, g: _rmsprop_ref(p, g, 0.01, 0.99, 1e-8, 0.1, 0.9, True)),
]


@pytest.mark.parametrize("name,make,ref", CASES, ids=[c[0] for c in CASES])
def test_first_steps_follow_the_published_rule(name, make, ref):
    grads = _grads()
    got, _ = _run(make, P0, grads)
    for t, (a, b) in enumerate(zip(got, ref(P0.copy(), grads))):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9, err_msg=f"{name}, step {t + 1}")


def test_float32_parameters_stay_float32_and_in_place():
    p = dj.nn.Parameter(dj.ones(3))
    data = p._data
    opt = Adam([p], lr=0.1)
    p.grad = dj.ones(3)
    opt.step()
    assert p._data is data and p.dtype == dj.float32
    np.testing.assert_allclose(p.numpy(), 0.9, rtol=1e-6)


def test_param_groups_and_zero_grad():
    a, b = dj.nn.Parameter(dj.ones(2)), dj.nn.Parameter(dj.ones(2))
    opt = SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    a.grad, b.grad = dj.ones(2), dj.ones(2)
    opt.step()
    np.testing.assert_allclose(a.numpy(), 0.9)
    np.testing.assert_allclose(b.numpy(), 0.5)
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    a.grad = dj.ones(2)
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(a.grad.numpy(), 0.0)
    with pytest.raises(ValueError, match="more than one parameter group"):
        SGD([{"params": [a]}, {"params": [a]}], lr=0.1)
    with pytest.raises(ValueError, match="Nesterov"):
        SGD([a], lr=0.1, nesterov=True)


def test_params_without_grad_are_skipped():
    a, b = dj.nn.Parameter(dj.ones(2)), dj.nn.Parameter(dj.ones(2))
    opt = Adam([a, b], lr=0.1)
    a.grad = dj.ones(2)
    opt.step()
    np.testing.assert_array_equal(b.numpy(), 1.0)
    assert b not in opt.state


def test_state_dict_resumes_exactly():
    grads = _grads(1)
    full, _ = _run(lambda ps: Adam(ps, lr=0.01), P0, grads)
    first, opt = _run(lambda ps: Adam(ps, lr=0.01), P0, grads[:2])
    saved = opt.state_dict()
    assert set(saved["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    assert saved["param_groups"][0]["params"] == [0] and saved["param_groups"][0]["lr"] == 0.01
    p = dj.nn.Parameter(dj.tensor(first[-1], dtype=dj.float64))
    opt2 = Adam([p], lr=0.5)
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["lr"] == 0.01
    for g in grads[2:]:
        p.grad = dj.tensor(g, dtype=dj.float64)
        opt2.step()
    np.testing.assert_array_equal(p.numpy(), full[-1])
    bad = {"state": {0: {"exp_avg": np.zeros(5)}}, "param_groups": saved["param_groups"]}
    with pytest.raises(StateDictError, match="exp_avg.*shape"):
        opt2.load_state_dict(bad)
