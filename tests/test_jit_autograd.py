"""A jitted function is a differentiable op: JitBackward0 on its results, gradients to
arguments and captured Parameters, broadcasting, two calls in one graph, hooks, retain_graph,
accumulation, no_grad, create_graph, the in-place check; and the trace cache's LRU bound."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
from dongjing.errors import DongjingError, JitError

RNG = np.random.default_rng(0)


def _t(*shape, grad=True):
    return dj.tensor(RNG.standard_normal(shape), requires_grad=grad)


def _fn(x, b):
    return dj.tanh(x * b + 1.0).sum(dim=0) * 2.0


def test_new_user_linear_backward():
    lin = nn.Linear(3, 1)
    x = dj.tensor(RNG.standard_normal((4, 3)).astype(np.float32))
    y = dj.jit(lin)(x)
    assert type(y.grad_fn).__name__ == "JitBackward0"
    assert {type(f).__name__ for f, _ in y.grad_fn.next_functions} == {"AccumulateGrad"}
    assert len(y.grad_fn.next_functions) == 2  # weight and bias, captured by reference
    y.sum().backward()
    got = [p.grad.numpy().copy() for p in lin.parameters()]
    lin.zero_grad()
    lin(x).sum().backward()
    for g, p in zip(got, lin.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-6)


def test_broadcasting_arguments_and_called_twice_in_one_graph():
    x, b = _t(4, 3), _t(3)
    f = dj.jit(_fn)
    loss = (f(x, b) * f(x * 2.0, b)).sum()
    loss.backward()
    got = x.grad.numpy().copy(), b.grad.numpy().copy()
    x.grad = b.grad = None
    (_fn(x, b) * _fn(x * 2.0, b)).sum().backward()
    np.testing.assert_allclose(got[0], x.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(got[1], b.grad.numpy(), rtol=1e-10)


def test_only_the_inputs_needing_grad_get_edges():
    x, b = _t(4, 3, grad=False), _t(3)
    y = dj.jit(_fn)(x, b)
    assert len(y.grad_fn.next_functions) == 1
    y.sum().backward()
    assert x.grad is None and b.grad is not None


def test_several_outputs_sum_their_gradients():
    @dj.jit
    def f(a, b):
        return a * b, {"s": (a + b).sum(), "n": 3}

    a, b = _t(3, 2), _t(2)
    u, d = f(a, b)
    assert d["n"] == 3
    (u.sum() * 2.0 + d["s"]).backward()
    ea, eb = a.detach().requires_grad_(), b.detach().requires_grad_()
    ((ea * eb).sum() * 2.0 + (ea + eb).sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), ea.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), eb.grad.numpy(), rtol=1e-12)


def test_hooks_accumulation_and_retain_graph():
    x, b = _t(4, 3), _t(3)
    y = dj.jit(_fn)(x, b)
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2.0)
    y.sum().backward(retain_graph=True)
    assert y.grad_fn.out_data is not None
    first = b.grad.numpy().copy()
    y.sum().backward()  # accumulates
    np.testing.assert_allclose(b.grad.numpy(), 2 * first)
    assert len(seen) == 2 and np.all(seen[0] == 1.0)
    b2 = b.detach().requires_grad_()
    (_fn(x.detach(), b2) * 2.0).sum().backward()
    np.testing.assert_allclose(first, b2.grad.numpy(), rtol=1e-12)
    assert y.grad_fn.out_data is None  # the saved intermediates are released
    with pytest.raises(RuntimeError, match="second time"):
        y.sum().backward()


def test_no_grad_runs_the_plain_program():
    f = dj.jit(_fn)
    x, b = _t(4, 3), _t(3)
    with dj.no_grad():
        y = f(x, b)
    assert y.grad_fn is None and not y.requires_grad
    trace = next(iter(f._cache.values()))[0]
    assert trace.grad_plans == {}  # no gradient program built, nothing saved
    z = f(x, b)
    np.testing.assert_allclose(y.numpy(), z.numpy())
    assert len(trace.grad_plans) == 1


def test_create_graph_raises_a_clear_error():
    x, b = _t(4, 3), _t(3)
    y = dj.jit(_fn)(x, b)
    with pytest.raises(JitError, match="create_graph=True"):
        dj.grad(y.sum(), [b], create_graph=True)


def test_parameter_changed_in_place_before_backward_raises():
    lin = nn.Linear(3, 2)
    y = dj.jit(lin)(dj.tensor(RNG.standard_normal((4, 3)).astype(np.float32)))
    with dj.no_grad():
        lin.weight.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_a_traced_train_step_returns_no_history():
    lin = nn.Linear(3, 1)

    @dj.jit
    def step(x):
        loss = lin(x).sum()
        loss.backward()
        return loss

    out = step(dj.tensor(np.ones((2, 3), np.float32)))
    assert out.grad_fn is None and lin.weight.grad is not None


def test_cache_size_drops_the_least_recently_used():
    f = dj.jit(lambda x: x * 2.0, cache_size=2)
    assert f.cache_limit == 2 and dj.jit(lambda x: x).cache_limit == 256
    a, b, c = dj.ones(1), dj.ones(2), dj.ones(3)
    f(a)
    f(b)
    f(a)  # a is now the most recent
    f(c)  # b is dropped
    assert f.cache_size == 2
    n = len(f.compile_times)
    f(a)
    assert len(f.compile_times) == n
    f(b)
    assert len(f.compile_times) == n + 1
    for bad in (0, -1, 2.5, True):
        with pytest.raises(JitError, match="cache_size"):
            dj.jit(lambda x: x, cache_size=bad)
    assert issubclass(JitError, DongjingError)


def test_identity_output_and_jitted_forward_method():
    x = _t(3)
    y = dj.jit(lambda a: (a, a * 2.0))(x)
    (y[0].sum() + y[1].sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 3.0))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        @dj.jit
        def forward(self, v):
            return dj.tanh(self.fc(v))

    net = Net()
    v = dj.tensor(RNG.standard_normal((4, 3)).astype(np.float32))
    out = net(v)
    assert type(out.grad_fn).__name__ == "JitBackward0"
    out.sum().backward()
    got = net.fc.weight.grad.numpy().copy()
    net.zero_grad()
    dj.tanh(net.fc(v)).sum().backward()
    np.testing.assert_allclose(got, net.fc.weight.grad.numpy(), rtol=1e-5)


def test_a_gradient_that_cannot_be_built_says_why():
    def f(x):
        return dj.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, dj.tanh(h)),
                             (dj.tensor(0), x))[1]

    jf = dj.jit(f)
    with pytest.raises(DongjingError, match="maximum_iterations.*built the gradient of f"):
        jf(_t(2))
    with dj.no_grad():
        assert jf(_t(2)).shape == (2,)


def test_jit_of_a_jitted_function_with_new_options():
    f = dj.jit(_fn)
    assert dj.jit(f) is f
    strict = dj.jit(f, strict=True, cache_size=3)
    assert strict is not f and strict.strict and strict.cache_limit == 3 and strict.fn is _fn
