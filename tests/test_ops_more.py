"""Issue 12's op surface against PyTorch (values and gradients; skipped without torch) and
against NumPy, plus eager = static (O0, O2) = dj.jit for a sample, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.errors import ArgumentError, DongjingError, DTypeError, ShapeError

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = RNG.uniform(-2, 2, (3, 5))
POS = RNG.uniform(0.2, 0.9, (3, 5))


def _both(fn_dj, fn_torch, *arrays, grad=True, atol=1e-10):
    """Run `fn` in dongjing and in torch (float64); compare the value and the input gradients."""
    xs = [dj.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    ts = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    out, ref = fn_dj(*xs), fn_torch(*ts)
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), atol=atol)
    assert out.dtype == np.dtype(str(ref.dtype).replace("torch.", ""))
    if grad and ref.requires_grad:
        w = RNG.standard_normal(ref.shape)
        (out * dj.tensor(w)).sum().backward()
        (ref * torch.tensor(w)).sum().backward()
        for x, t in zip(xs, ts):
            if t.requires_grad:
                np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), atol=atol)


UNARY = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "log1p", "expm1", "log2",
         "log10", "floor", "ceil", "round", "trunc"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_torch(name):
    a = POS if name in ("asin", "acos", "log2", "log10", "log1p") else X
    _both(lambda x: getattr(x, name)(), lambda t: getattr(torch, name)(t), a)


def test_rounding_keeps_integers_and_halves_go_to_even():
    assert dj.floor(dj.tensor([3, -2])).dtype == dj.int64
    np.testing.assert_array_equal(dj.round(dj.tensor([0.5, 1.5, 2.5, -0.5])).numpy(),
                                  [0.0, 2.0, 2.0, -0.0])
    _both(lambda x: x.round(decimals=2), lambda t: t.round(decimals=2), X * 10)
    _both(lambda x: dj.round(x, decimals=-1), lambda t: torch.round(t, decimals=-1), X * 100)


def test_floor_divide_and_remainder_follow_pytorch_signs():
    a = np.array([7.0, -7.0, 7.0, -7.0, 5.5])
    b = np.array([2.0, 2.0, -2.0, -2.0, 1.5])
    _both(lambda x, y: x // y, lambda x, y: x // y, a, b, grad=False)  # torch: no derivative
    _both(lambda x, y: x % y, lambda x, y: x % y, a, b)
    ia, ib = dj.tensor([7, -7, 7, -7]), dj.tensor([2, 2, -2, -2])
    np.testing.assert_array_equal((ia % ib).numpy(), [1, 1, -1, -1])
    np.testing.assert_array_equal((ia // ib).numpy(), [3, -4, -4, 3])
    np.testing.assert_array_equal((10 // ib).numpy(), [5, 5, -5, -5])
    np.testing.assert_array_equal((10 % ib).numpy(), [0, 0, 0, 0])
    assert (ia // 2).dtype == dj.int64
    with pytest.raises(DongjingError, match="division by zero"):
        ia % dj.tensor([1, 0, 1, 1])


def test_atan2_and_predicates():
    _both(dj.atan2, torch.atan2, X, POS[:1])
    v = dj.tensor([0.0, float("nan"), float("inf"), -1.0])
    np.testing.assert_array_equal(v.isnan().numpy(), [False, True, False, False])
    np.testing.assert_array_equal(dj.isinf(v).numpy(), [False, False, True, False])
    np.testing.assert_array_equal(dj.isfinite(v).numpy(), [True, False, False, True])


@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": 0, "keepdim": True}])
def test_reductions_match_torch(kw):
    _both(lambda x: x.prod(**kw) if kw else x.prod(), lambda t: t.prod(**kw), X)
    _both(lambda x: x.std(**kw), lambda t: t.std(**kw), X)
    _both(lambda x: x.var(**kw, correction=0), lambda t: t.var(**kw, correction=0), X)
    _both(lambda x: x.var(**kw, unbiased=False), lambda t: t.var(**kw, unbiased=False), X)
    for p in (2, 1, float("inf"), 3.0):
        _both(lambda x, p=p: x.norm(p=p, **kw), lambda t, p=p: t.norm(p=p, **kw), X)
    for fn in ("all", "any"):
        got = getattr(dj.tensor(X) > 0, fn)(**kw).numpy()
        ref = getattr(torch.tensor(X) > 0, fn)(**kw).numpy()
        np.testing.assert_array_equal(got, ref)


def test_products_with_zeros_have_exact_gradients():
    z = np.array([[0.0, 2.0, 3.0, 0.0], [1.5, 0.0, 2.0, -1.0], [1.0, 2.0, 0.5, 3.0]])
    _both(lambda x: x.prod(1), lambda t: t.prod(1), z)
    _both(lambda x: x.prod(), lambda t: t.prod(), z[1:2])
    _both(lambda x: dj.cumprod(x, 1), lambda t: torch.cumprod(t, 1), z)
    _both(lambda x: dj.cumprod(x, 0), lambda t: torch.cumprod(t, 0), z)
    _both(lambda x: dj.cumsum(x, -1), lambda t: torch.cumsum(t, -1), z)
    assert dj.cumsum(dj.tensor([True, True]), 0).dtype == dj.int64


def test_scatter_from_a_larger_src_uses_its_leading_block():
    x = dj.zeros(2, 3)
    src = dj.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    out = dj.scatter_add(x, 1, dj.tensor([[2], [0]]), src)
    np.testing.assert_array_equal(out.numpy(), [[0, 0, 0], [3, 0, 0]])
    out.sum().backward()
    np.testing.assert_array_equal(src.grad.numpy(), [[1, 0, 0], [1, 0, 0]])


def test_norm_at_zero_has_zero_gradient():
    x = dj.zeros(3, requires_grad=True)
    x.norm().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])


def test_sort_argsort_topk_match_torch():
    a = np.array([[3.0, 1.0, 2.0, 1.0, 5.0], [0.5, 0.5, -1.0, 4.0, 0.5]])
    for desc in (False, True):
        got = dj.sort(dj.tensor(a), dim=1, descending=desc)
        ref = torch.sort(torch.tensor(a), dim=1, descending=desc, stable=True)
        np.testing.assert_array_equal(got.values.numpy(), ref.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), ref.indices.numpy())
        np.testing.assert_array_equal(dj.tensor(a).argsort(0, descending=desc).numpy(),
                                      torch.argsort(torch.tensor(a), dim=0, descending=desc,
                                                    stable=True).numpy())
    _both(lambda x: x.sort(0).values, lambda t: t.sort(0).values, X)
    for largest in (True, False):
        _both(lambda x, k=largest: x.topk(2, dim=1, largest=k).values,
              lambda t, k=largest: t.topk(2, dim=1, largest=k).values, X)
        got = dj.tensor(X).topk(3, 0, largest).indices.numpy()
        np.testing.assert_array_equal(got, torch.tensor(X).topk(3, 0, largest).indices.numpy())
    assert dj.topk(dj.tensor(X), 2).indices.dtype == dj.int64
    with pytest.raises(ShapeError, match="topk"):
        dj.topk(dj.tensor(X), 6)


def test_gather_scatter_match_torch():
    idx = np.array([[0, 2], [1, 1], [4, 0]])
    _both(lambda x, i: x.gather(1, i), lambda t, i: t.gather(1, i), X, idx)
    src = RNG.standard_normal((3, 2))
    _both(lambda x, i, s: x.scatter_add(1, i, s), lambda t, i, s: t.scatter_add(1, i, s),
          X, idx, src)
    uniq = np.array([[0, 2], [1, 3], [4, 0]])
    _both(lambda x, i, s: x.scatter(1, i, s), lambda t, i, s: t.scatter(1, i, s), X, uniq, src)
    _both(lambda x, i: dj.scatter(x, 1, i, value=2.0), lambda t, i: t.scatter(1, i, 2.0),
          X, uniq)
    _both(lambda x, i: x.index_select(1, i), lambda t, i: t.index_select(1, i), X,
          np.array([4, 0, 4]))
    mask = X > 0.5
    _both(lambda x, m: x.masked_fill(m, -1.0), lambda t, m: t.masked_fill(m, -1.0), X, mask)
    with pytest.raises(ShapeError, match="out of range"):
        dj.gather(dj.tensor(X), 1, dj.tensor([[5]]))
    with pytest.raises(ShapeError, match="out of range"):
        dj.scatter_add(dj.tensor(X), 0, dj.tensor([[-1]]), dj.tensor([[1.0]]))
    with pytest.raises(DTypeError, match="index"):
        dj.gather(dj.tensor(X), 1, dj.tensor([[0.0]]))


def test_layout_ops_match_torch():
    _both(lambda x: x.repeat(2, 1, 3), lambda t: t.repeat(2, 1, 3), X)
    _both(lambda x: dj.tile(x, (2,)), lambda t: torch.tile(t, (2,)), X)
    _both(lambda x: x.roll((1, -2), (0, 1)), lambda t: t.roll((1, -2), (0, 1)), X)
    _both(lambda x: x.roll(4), lambda t: t.roll(4), X)
    _both(lambda x: x.flip(0, 1), lambda t: t.flip(0, 1), X)
    _both(lambda x: x.tril(1), lambda t: t.tril(1), X)
    _both(lambda x: dj.triu(x, -1), lambda t: torch.triu(t, -1), X)
    _both(lambda x: dj.cat(x.chunk(2, 1)[::-1], 1) if hasattr(dj, "cat") else
          dj.concat(list(x.chunk(2, 1)[::-1]), 1),
          lambda t: torch.cat(t.chunk(2, 1)[::-1], 1), X)
    _both(lambda x: x.split([1, 4], 1)[1] * 2, lambda t: t.split([1, 4], 1)[1] * 2, X)
    _both(lambda x: x.split(2)[1], lambda t: t.split(2)[1], X)
    _both(lambda x: x.narrow(1, 1, 3), lambda t: t.narrow(1, 1, 3), X)
    _both(lambda x: x.unbind(1)[2], lambda t: t.unbind(1)[2], X)
    assert len(dj.tensor(X).chunk(2, 1)) == len(torch.tensor(X).chunk(2, 1))


def test_products_match_torch():
    a, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 4, 5))
    _both(dj.bmm, torch.bmm, a, b)
    _both(dj.outer, torch.outer, X[0], X[1, :3])
    for eq, shapes in [("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij->ji", [(3, 4)]),
                       ("ij->", [(3, 4)]), ("ij,j", [(3, 4), (4,)]),
                       ("ik,jk,j->ij", [(2, 3), (4, 3), (4,)])]:
        arrays = [RNG.standard_normal(s) for s in shapes]
        _both(lambda *xs, e=eq: dj.einsum(e, *xs), lambda *ts, e=eq: torch.einsum(e, *ts),
              *arrays)
    with pytest.raises(ShapeError, match="'...'"):
        dj.einsum("...ij->...ji", dj.tensor(a))
    with pytest.raises(ShapeError, match="batch"):
        dj.bmm(dj.tensor(a), dj.tensor(RNG.standard_normal((3, 4, 5))))


def _sample(x, idx):
    """A bit of everything, for eager = static = jit."""
    s = dj.sort(x, dim=1, descending=True).values
    y = dj.gather(s, 1, idx).sum(1, keepdim=True) + dj.cumsum(x, 0).sin() + x.topk(2).values.sum()
    z = dj.einsum("ij,ij->i", y, dj.flip(x, 1)) + x.std(1) + x.norm(dim=1)
    return z * dj.cumprod(x.abs() + 0.5, 1)[:, -1] + (x // 0.7 + x % 0.7).sum(1)


def test_eager_static_and_jit_agree():
    idx = np.array([[0, 4], [2, 2], [1, 3]])
    x = dj.tensor(X, requires_grad=True)
    eager = _sample(x, dj.tensor(idx))
    eager.sum().backward()
    g = dj.Graph()
    with g.as_default():
        px, pi = dj.placeholder(X.shape, X.dtype), dj.placeholder(idx.shape, idx.dtype)
        out = _sample(px, pi)
        (grad,) = dj.gradients(out.sum(), [px])
    for level in (0, 2):
        value, gx = dj.Session(g, optimize=level).run([out, grad], {px: X, pi: idx})
        np.testing.assert_allclose(value, eager.numpy(), rtol=1e-12)
        np.testing.assert_allclose(gx, x.grad.numpy(), rtol=1e-12)
    xj = dj.tensor(X, requires_grad=True)
    jitted = dj.jit(_sample)(xj, dj.tensor(idx))
    jitted.sum().backward()
    np.testing.assert_allclose(jitted.numpy(), eager.numpy(), rtol=1e-12)
    np.testing.assert_allclose(xj.grad.numpy(), x.grad.numpy(), rtol=1e-12)


def test_bad_arguments_are_refused():
    t = dj.tensor(X)
    with pytest.raises(ArgumentError, match="unbiased= or correction="):
        t.var(unbiased=True, correction=0)
    with pytest.raises(ShapeError, match="add up"):
        t.split([1, 1], 1)
    with pytest.raises(ShapeError, match="narrow"):
        t.narrow(1, 3, 4)
    with pytest.raises(ShapeError, match="repeat"):
        t.repeat(2)
    with pytest.raises(ShapeError, match="reduce"):
        dj.scatter(t, 1, dj.tensor([[0]]), 1.0, reduce="multiply")
    with pytest.raises(ShapeError, match="nuc"):
        t.norm(p="nuc")
    with pytest.raises(DTypeError, match="bool"):
        dj.tensor([True]) // dj.tensor([True])
    with pytest.raises(ShapeError, match="tril"):
        dj.tril(dj.tensor([1.0, 2.0]))
