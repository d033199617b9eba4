"""The eager step's in-place NumPy path (optim/fused.py) against the rules run as dongjing ops:
bit-identical parameters and state over several steps, and the same version counters, `.grad`
and hook behaviour."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.optim import SGD, Adam, AdamW, fused

STEPS = 5


def _reference(cls):
    """A subclass whose `update` is its own: the step runs the rule as dongjing ops."""

    class Reference(cls):
        def update(self, p, g, state, group):
            return super().update(p, g, state, group)

    return Reference


def _train(cls, dtype, device="cpu", **hyper):
    """Parameters and state after STEPS steps on fixed gradients (two groups, one frozen)."""
    rng = np.random.default_rng(0)
    shapes = [(4, 3), (3,), ()]
    params = [dj.nn.Parameter(dj.tensor(rng.standard_normal(s), dtype=dtype, device=device))
              for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(STEPS)]
    opt = cls([{"params": params[:2]}, {"params": params[2:], "lr": 0.03}], **hyper)
    versions = []
    for step in range(STEPS):
        for p, g in zip(params, grads[step]):
            p.grad = (None if (step == 2 and p is params[1])
                      else dj.tensor(g, dtype=dtype, device=device))
        before = [p._version[0] for p in params]
        opt.step()
        versions.append([p._version[0] - b for p, b in zip(params, before)])
    state = [{k: v.cpu().numpy().copy() for k, v in opt.state[p].items()} for p in params]
    return [p.detach().cpu().numpy().copy() for p in params], state, versions, opt


CASES = [
    (SGD, dict(lr=0.1)),
    (SGD, dict(lr=0.1, momentum=0.9)),
    (SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    (SGD, dict(lr=0.1, momentum=0.8, dampening=0.3, weight_decay=0.02)),
    (Adam, dict(lr=0.01)),
    (Adam, dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    (AdamW, dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6)),
    (AdamW, dict(lr=0.01, amsgrad=True)),
]


@pytest.mark.parametrize("dtype", [dj.float32, dj.float64])
@pytest.mark.parametrize("cls,hyper", CASES)
def test_fused_step_equals_the_rule_bit_for_bit(cls, hyper, dtype):
    assert cls([dj.nn.Parameter(dj.zeros(1))], **hyper)._fused_rule() is not None
    assert _reference(cls)([dj.nn.Parameter(dj.zeros(1))], **hyper)._fused_rule() is None
    fast, fast_state, fast_versions, _ = _train(cls, dtype, **hyper)
    ref, ref_state, ref_versions, _ = _train(_reference(cls), dtype, **hyper)
    for a, b in zip(fast, ref):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    for a, b in zip(fast_state, ref_state):
        assert a.keys() == b.keys()
        for k in a:
            assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k
    assert fast_versions == ref_versions


FAKE_DEVICE = pytest.mark.skipif(dj.cuda.is_available(), reason="a real GPU owns 'cuda' here "
                                 "(tests/gpu/test_gpu_fast_paths.py)")


@FAKE_DEVICE
@pytest.mark.parametrize("cls,hyper", CASES)
def test_fused_step_on_a_device_equals_the_rule_bit_for_bit(cls, hyper):
    """On a device (the strict fake CUDA backend) the in-place path runs with the backend's
    namespace and its cached device scalars, and equals the rule run as dispatched ops."""
    from fake_cuda import fake_cuda

    with fake_cuda():
        fast, fast_state, fast_versions, _ = _train(cls, dj.float32, "cuda", **hyper)
        ref, ref_state, ref_versions, _ = _train(_reference(cls), dj.float32, "cuda", **hyper)
    for a, b in zip(fast, ref):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    for a, b in zip(fast_state, ref_state):
        assert a.keys() == b.keys()
        for k in a:
            assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k
    assert fast_versions == ref_versions


@FAKE_DEVICE
def test_fused_step_takes_device_arrays_and_refuses_mixed_places():
    from fake_cuda import fake_cuda

    with fake_cuda():
        p = dj.nn.Parameter(dj.ones(3, device="cuda"))
        group = {"lr": 0.5, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0,
                 "nesterov": False}
        assert fused.sgd(p, dj.ones(3, device="cuda"), {}, group)
        np.testing.assert_array_equal(p.detach().cpu().numpy(), [0.5, 0.5, 0.5])
        assert not fused.sgd(p, dj.ones(3), {}, group)  # a host gradient: the rule's checks


def test_fused_step_keeps_grad_and_state_versions():
    p = dj.nn.Parameter(dj.ones(3))
    opt = SGD([p], lr=0.5, momentum=0.9)
    g = dj.tensor([1.0, 2.0, 3.0])
    p.grad = g
    opt.step()
    buf = opt.state[p]["momentum_buffer"]
    assert p.grad is g and np.array_equal(g.numpy(), [1.0, 2.0, 3.0])  # .grad is only read
    assert buf._version[0] == 1 and p._version[0] == 1
    np.testing.assert_array_equal(p.numpy(), [0.5, 0.0, -0.5])
    # a tape node that saved p sees the in-place update
    p2 = dj.nn.Parameter(dj.ones(2))
    loss = (p2 * p2).sum()
    opt2 = Adam([p2], lr=0.1)
    p2.grad = dj.ones(2)
    opt2.step()
    with pytest.raises(Exception, match="modified by an inplace operation"):
        loss.backward()


def test_fused_step_grad_hooks_and_accumulation_unchanged():
    p = dj.nn.Parameter(dj.tensor([1.0, -1.0]))
    seen = []
    p.register_hook(lambda grad: seen.append(grad.numpy().copy()) or grad * 2)
    opt = SGD([p], lr=0.1)
    (p * 3).sum().backward()
    (p * 1).sum().backward()  # accumulates into .grad
    np.testing.assert_array_equal(p.grad.numpy(), [8.0, 8.0])
    opt.step()
    np.testing.assert_allclose(p.numpy(), [0.2, -1.8], rtol=1e-6)
    assert len(seen) == 2


def test_fallbacks_take_the_rule():
    """Mixed dtypes, a tensor hyperparameter, tracing and the profiler run the rule itself."""
    p = dj.nn.Parameter(dj.ones(2))
    opt = SGD([p], lr=0.5)
    p.grad = dj.tensor([1.0, 1.0], dtype=dj.float64)  # promoted by the rule, cast on write
    opt.step()
    np.testing.assert_array_equal(p.numpy(), [0.5, 0.5])
    assert p.dtype == dj.float32
    q = dj.nn.Parameter(dj.ones(2))
    opt = Adam([q], lr=0.1)
    opt.param_groups[0]["betas"] = [0.9, 0.999]  # a list: not the fused rule's form
    q.grad = dj.ones(2)
    opt.step()
    np.testing.assert_allclose(q.numpy(), [0.9, 0.9], rtol=1e-5)
    with dj.profiler.profile():
        assert opt._fused_rule() is None
