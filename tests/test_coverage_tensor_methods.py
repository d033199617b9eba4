"""Tensor methods added for PyTorch coverage (issue 33): every method form of the new torch.*
functions, and every new in-place form, against PyTorch's methods (values and gradients through
the in-place write); the queries, random fills and callables torch-free."""

from __future__ import annotations

import numpy as np
import pytest
from test_coverage_torch_functions import CALLS, NO_GRAD
from torch_compare import compare, pos, r

import dongjing as dj
from dongjing.errors import ShapeError
from dongjing.tensor.torch_methods_more import _ALIASES, _INPLACE, _SAME_NAME


def _method_calls():
    """A call of each new method: the first table row of its function whose first argument is a
    tensor (the method's self), or a row of its own below."""
    seen = set()
    for name, arrays, kwargs in CALLS + EXTRA:
        if name in seen or name not in _SAME_NAME + list(_ALIASES):
            continue
        if arrays and isinstance(arrays[0], np.ndarray):
            seen.add(name)
            yield pytest.param(name, arrays, kwargs, id=name)


A, B = r(3, 4), r(3, 4, seed=1)
EXTRA = [("absolute", (A,), {}), ("divide", (A, pos(3, 4)), {}), ("multiply", (A, B), {}),
         ("subtract", (A, B), {}), ("true_divide", (A, pos(3, 4)), {}), ("negative", (A,), {}),
         ("broadcast_to", (r(4), (3, 4)), {}), ("hardshrink", (A,), {}),
         ("prelu", (A, np.array([0.3])), {}), ("svd", (r(4, 3),), {})]


def _call(method, arrays, kwargs, tensor):
    def fn(*given):
        args = list(arrays)
        for i, t in zip([i for i, a in enumerate(arrays) if isinstance(a, np.ndarray)], given):
            args[i] = t
        for i, a in enumerate(arrays):
            if isinstance(a, tuple):
                args[i] = tuple(tensor(e) if isinstance(e, np.ndarray) else e for e in a)
        return getattr(args[0], method)(*args[1:], **kwargs)
    return fn


@pytest.mark.parametrize("name,arrays,kwargs", list(_method_calls()))
def test_methods_equal_pytorch(name, arrays, kwargs):
    torch = pytest.importorskip("torch")
    if name == "svd":  # singular vectors are defined up to sign: compare the values
        ours, theirs = dj.tensor(arrays[0]).svd(), torch.tensor(arrays[0]).svd()
        np.testing.assert_allclose(ours[1].numpy(), theirs[1].numpy(), rtol=1e-10)
        return
    compare(_call(name, arrays, kwargs, dj.tensor), _call(name, arrays, kwargs, torch.tensor),
            [a for a in arrays if isinstance(a, np.ndarray)], grad=name not in NO_GRAD,
            rtol=1e-6)


def test_every_new_method_has_a_case():
    covered = {p.values[0] for p in _method_calls()}
    assert set(_SAME_NAME) | set(_ALIASES) <= covered | {"svd", "bernoulli"}  # random: below


# one call per in-place method: the arguments after self
INPLACE_ARGS = {
    "addmm": (r(3, 2), r(2, 4)), "arctan2": (B,), "atan2": (B,), "cumprod": (1,),
    "cumsum": (0,), "divide": (pos(3, 4),), "eq": (B,), "floor_divide": (pos(3, 4),),
    "fmod": (pos(3, 4),), "ge": (B,), "gt": (B,), "hypot": (B,), "le": (B,),
    "logical_and": (B,), "logical_or": (B,), "lt": (B,), "multiply": (B,), "ne": (B,),
    "remainder": (pos(3, 4),), "subtract": (B,), "tril": (), "triu": (1,),
    "true_divide": (pos(3, 4),), "addbmm": (r(2, 3, 5), r(2, 5, 4)),
    "addmv": (r(3, 2), r(2)), "addr": (r(3), r(4)), "baddbmm": (r(3, 2), r(2, 4)),
    "copysign": (B,), "greater": (B,), "greater_equal": (B,), "less": (B,),
    "less_equal": (B,), "not_equal": (B,), "logical_xor": (B,), "xlogy": (pos(3, 4),),
    "heaviside": (B,), "index_copy": (1, np.array([2, 0]), r(3, 2)),
    "index_fill": (0, np.array([1]), 2.5), "index_put": ((np.array([0, 2]), np.array([1, 3])),
                                                        r(2)),
    "ldexp": (np.array([1, 2, 0, 3]),), "logit": (0.1,), "put": (np.array([0, 7]), r(2)),
    "masked_scatter": (A > 0, r(12)), "renorm": (2, 0, 1.0),
}
DOMAIN = {"acos": 0.4, "asin": 0.4, "arccos": 0.4, "arcsin": 0.4, "arctanh": 0.4,
          "logit": None, "arccosh": None, "log10": None, "log1p": None, "log2": None}
NO_INPLACE_GRAD = {"eq", "ge", "gt", "le", "lt", "ne", "greater", "greater_equal", "less",
                   "less_equal", "not_equal", "logical_and", "logical_or", "logical_not",
                   "logical_xor", "heaviside", "floor_divide", "round", "floor", "ceil",
                   "trunc", "fix", "sgn", "remainder", "fmod",
                   "arccosh", "arcsinh", "arctanh"}  # PyTorch: no gradient for these in place


def _self_array(name):
    if name in ("logit",):
        return pos(3, 4) * 0.4
    if name in ("arccosh",):
        return pos(3, 4) + 1.0
    if name in ("log10", "log1p", "log2", "addbmm", "addmv", "addr", "baddbmm", "addmm"):
        return pos(3, 4) if name.startswith("log") else A
    if DOMAIN.get(name):
        return A * DOMAIN[name]
    return A


@pytest.mark.parametrize("name", _INPLACE)
def test_inplace_methods_equal_pytorch(name):
    torch = pytest.importorskip("torch")
    if name in ("baddbmm",):
        x, extra = r(2, 3, 4), (r(2, 3, 5), r(2, 5, 4))
    elif name == "addmv":
        x, extra = r(3), (r(3, 2), r(2))
    else:
        x, extra = _self_array(name), INPLACE_ARGS.get(name, ())
    grad = name not in NO_INPLACE_GRAD

    def run(lib, tensor):
        leaf = tensor(x, requires_grad=grad)
        t = leaf * 1.0 if grad else leaf.clone()
        args = [tuple(tensor(e) for e in a) if isinstance(a, tuple) else
                tensor(a) if isinstance(a, np.ndarray) else a for a in extra]
        out = getattr(t, name + "_")(*args)
        assert out is t
        if grad:
            (t * tensor(np.linspace(-1, 1, t.numel()).reshape(t.shape))).sum().backward()
        return t, leaf.grad

    ours, ours_grad = run(dj, dj.tensor)
    theirs, their_grad = run(torch, torch.tensor)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6,
                               atol=1e-12)
    if grad:
        np.testing.assert_allclose(ours_grad.numpy(), their_grad.numpy(), rtol=1e-6,
                                   atol=1e-10)


def test_queries_and_conversions_equal_pytorch():
    torch = pytest.importorskip("torch")
    x = r(3, 4)
    ours, theirs = dj.tensor(x), torch.tensor(x)
    for name in ("is_signed", "is_complex", "is_conj", "is_neg", "get_device", "dim_order",
                 "storage_offset"):
        assert getattr(ours, name)() == getattr(theirs, name)(), name
    assert ours[1:].storage_offset() == theirs[1:].storage_offset() == 4
    assert ours.T.dim_order() == tuple(theirs.T.dim_order())
    np.testing.assert_array_equal(ours.byte().numpy(), theirs.byte().numpy())
    np.testing.assert_array_equal(ours.short().numpy(), theirs.short().numpy())
    np.testing.assert_allclose(ours.adjoint().numpy(), theirs.adjoint().numpy())
    np.testing.assert_allclose(ours.sum_to_size(1, 4).numpy(), theirs.sum_to_size(1, 4).numpy())
    np.testing.assert_allclose(ours.unfold(1, 2, 2).numpy(), theirs.unfold(1, 2, 2).numpy())
    np.testing.assert_allclose(ours.as_strided((2, 2), (1, 4), 1).numpy(),
                               theirs.as_strided((2, 2), (1, 4), 1).numpy())
    m = r(3, 3)
    for n in (0, 1, 3, -2):
        np.testing.assert_allclose(dj.tensor(m).matrix_power(n).numpy(),
                                   torch.tensor(m).matrix_power(n).numpy(), rtol=1e-8)
    z, tz = dj.zeros(5, 3), torch.zeros(5, 3)
    np.testing.assert_array_equal(z.fill_diagonal_(2.0, wrap=True).numpy(),
                                  tz.fill_diagonal_(2.0, wrap=True).numpy())
    assert dj.tensor([0.5]).is_nonzero() and not dj.tensor([0]).is_nonzero()


def test_method_gradients_flow_through_unfold_and_as_strided():
    x = dj.tensor(r(3, 4), requires_grad=True)
    (x.unfold(1, 2, 1).sum() + x.as_strided((2,), (5,)).sum()).backward()
    expected = np.array([[1, 2, 2, 1]] * 3, float)
    expected.flat[[0, 5]] += 1
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_random_fills_and_python_maps():
    dj.manual_seed(0)
    draws = dj.full((4000,), 0.3).bernoulli().numpy()
    assert set(np.unique(draws)) == {0.0, 1.0} and abs(draws.mean() - 0.3) < 0.03
    t = dj.zeros(4000)
    vals = t.random_(3, 7).numpy()
    assert set(np.unique(vals)) == {3, 4, 5, 6}
    assert (dj.zeros(1000).geometric_(0.5).numpy() >= 1).all()
    ln = dj.zeros(20000).log_normal_(0.0, 0.5).numpy()
    assert abs(np.log(ln).mean()) < 0.02 and abs(np.log(ln).std() - 0.5) < 0.02
    c = dj.zeros(20000).cauchy_(1.0, 2.0).numpy()
    assert abs(np.median(c) - 1.0) < 0.1
    a = dj.tensor([1.0, 2.0, 3.0])
    a.map_(dj.tensor([10.0, 20.0, 30.0]), lambda u, v: u * v)
    np.testing.assert_array_equal(a.numpy(), [10.0, 40.0, 90.0])
    a.map2_(dj.tensor(1.0), dj.tensor([0.0, 1.0, 2.0]), lambda u, v, w: u + v + w)
    np.testing.assert_array_equal(a.numpy(), [11.0, 42.0, 93.0])
    with pytest.raises(ShapeError, match="fill_diagonal_"):
        dj.zeros(3).fill_diagonal_(1.0)
    with pytest.raises(ShapeError, match="as_strided"):
        dj.zeros(4).as_strided((3,), (2,))
