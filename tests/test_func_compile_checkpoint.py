"""`dj.func` transforms, `dj.compile` and `dj.utils.checkpoint`: against derivatives worked
out by hand, against eager runs, and against `torch.func` / `torch.utils.checkpoint` when
PyTorch is installed."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.func import (
    functional_call,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    vjp,
    vmap,
)
from dongjing.utils.checkpoint import checkpoint, checkpoint_sequential

X = np.array([0.5, -1.0, 2.0])


def _t(a, grad=False):
    return dj.tensor(np.asarray(a, np.float64), requires_grad=grad)


def cube_sum(x):
    return (x ** 3).sum()


def test_grad_nests_and_matches_calculus():
    np.testing.assert_allclose(grad(cube_sum)(_t(X)).numpy(), 3 * X ** 2)
    assert not grad(cube_sum)(_t(X)).requires_grad
    second = grad(lambda x: grad(cube_sum)(x).sum())(_t(X))
    np.testing.assert_allclose(second.numpy(), 6 * X)
    np.testing.assert_allclose(hessian(cube_sum)(_t(X)).numpy(), np.diag(6 * X))
    g, value = grad_and_value(cube_sum)(_t(X))
    assert value.item() == pytest.approx((X ** 3).sum())
    gx, gy = grad(lambda x, y: (x * y).sum(), argnums=(0, 1))(_t(X), _t(2 * X))
    np.testing.assert_allclose(gx.numpy(), 2 * X)
    np.testing.assert_allclose(gy.numpy(), X)
    g, aux = grad(lambda x: (cube_sum(x), "note"), has_aux=True)(_t(X))
    assert aux == "note"
    with pytest.raises(dj.ShapeError, match="one-element"):
        grad(lambda x: x * 2)(_t(X))


def test_jacobians_and_vjp():
    a = np.arange(6.0).reshape(2, 3)
    j = jacrev(lambda x: dj.tensor(a) @ dj.tanh(x))(_t(X))
    np.testing.assert_allclose(j.numpy(), a * (1 - np.tanh(X) ** 2))
    np.testing.assert_allclose(jacfwd(lambda x: x * x)(_t(X)).numpy(), np.diag(2 * X))
    out, fn = vjp(lambda x: x * x, _t(X))
    (v,) = fn(_t([1.0, 0.0, 2.0]))
    np.testing.assert_allclose(v.numpy(), [2 * X[0], 0.0, 4 * X[2]])


def test_vmap_loops_over_the_batch():
    batch = np.arange(12.0).reshape(4, 3)
    out = vmap(lambda row, w: (row * w).sum(), in_dims=(0, None))(_t(batch), _t(X))
    np.testing.assert_allclose(out.numpy(), batch @ X)
    per_example = vmap(grad(cube_sum))(_t(batch))
    np.testing.assert_allclose(per_example.numpy(), 3 * batch ** 2)
    cols = vmap(lambda c: c * 2, in_dims=1, out_dims=1)(_t(batch))
    np.testing.assert_allclose(cols.numpy(), 2 * batch)


def test_functional_call_swaps_parameters_for_one_call():
    lin = dj.nn.Linear(3, 2, dtype=dj.float64)
    w = _t(np.ones((2, 3)), grad=True)
    out = functional_call(lin, {"weight": w, "bias": _t([1.0, -1.0])}, (_t(X),))
    np.testing.assert_allclose(out.numpy(), [X.sum() + 1, X.sum() - 1])
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.tile(X, (2, 1)))
    assert lin.weight.shape == (2, 3) and not np.allclose(lin.weight.numpy(), 1.0)
    with pytest.raises(KeyError, match="no parameters"):
        functional_call(lin, {"scale": w}, (_t(X),))


def test_compile_is_jit_with_pytorch_arguments():
    lin = dj.nn.Linear(3, 2)
    x = dj.randn(4, 3)
    for options in ({}, {"mode": "reduce-overhead"}, {"fullgraph": True, "dynamic": False}):
        np.testing.assert_allclose(dj.compile(lin, **options)(x).numpy(), lin(x).numpy(),
                                   rtol=1e-6)

    @dj.compile(backend="inductor")
    def f(a):
        return dj.tanh(a) * 2

    np.testing.assert_allclose(f(x).numpy(), np.tanh(x.numpy()) * 2, rtol=1e-6)
    assert dj.compile(lin, disable=True) is lin and dj.compile(lin, backend="eager") is lin
    with pytest.raises(ValueError, match="mode"):
        dj.compile(lin, mode="fastest")


def test_checkpoint_recomputes_with_the_same_randomness():
    dj.manual_seed(0)
    lin, drop = dj.nn.Linear(3, 3, dtype=dj.float64), dj.nn.Dropout(0.5)

    def piece(x):
        return drop(dj.tanh(lin(x)))

    x = _t(np.random.default_rng(0).normal(size=(4, 3)), grad=True)
    dj.manual_seed(1)
    y = checkpoint(piece, x, use_reentrant=False)
    assert y.grad_fn is not None
    y.sum().backward()
    got = x.grad.numpy().copy(), lin.weight.grad.numpy().copy()
    x.grad = lin.weight.grad = None
    dj.manual_seed(1)
    want = piece(x)
    want.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), want.detach().numpy())
    np.testing.assert_allclose(got[0], x.grad.numpy())
    np.testing.assert_allclose(got[1], lin.weight.grad.numpy())


def test_checkpoint_reaches_parameters_without_input_gradients():
    lin = dj.nn.Linear(2, 2, dtype=dj.float64)
    a, b = checkpoint(lambda x: (lin(x), lin(x) * 2), _t([[1.0, 2.0]]))
    (a.sum() + b.sum()).backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), 3 * np.array([[1.0, 2.0]] * 2))
    seq = dj.nn.Sequential(*[dj.nn.Linear(2, 2) for _ in range(4)])
    x = dj.randn(3, 2)
    np.testing.assert_allclose(checkpoint_sequential(seq, 2, x).detach().numpy(),
                               seq(x).detach().numpy(), rtol=1e-6)


def test_func_matches_torch_func():
    torch = pytest.importorskip("torch")

    def f(lib, x, w):
        return (lib.tanh(x @ w) ** 2).sum()

    w = np.random.default_rng(1).normal(size=(3, 2))
    xb = np.random.default_rng(2).normal(size=(5, 3))
    ours = vmap(grad(lambda x, w: f(dj, x, w), argnums=1), in_dims=(0, None))(_t(xb), _t(w))
    theirs = torch.func.vmap(torch.func.grad(lambda x, w: f(torch, x, w), argnums=1),
                             in_dims=(0, None))(torch.tensor(xb), torch.tensor(w))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10)
    ours = hessian(lambda x: f(dj, x, _t(w)))(_t(xb[0]))
    theirs = torch.func.hessian(lambda x: f(torch, x, torch.tensor(w)))(torch.tensor(xb[0]))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-9)
