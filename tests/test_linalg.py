"""`dj.linalg`: values against NumPy, float64 gradient checks, graphs, and values and
gradients against PyTorch's `torch.linalg` when it is installed."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dongjing as dj
from dongjing.autograd import gradcheck

LA = dj.linalg
RNG = np.random.default_rng(11)
M = RNG.normal(size=(2, 3, 3))
SPD = M @ np.swapaxes(M, -1, -2) + 3 * np.eye(3)
TALL = RNG.normal(size=(2, 4, 3))
B = RNG.normal(size=(2, 3, 2))


def _t(a, grad=False):
    return dj.tensor(np.asarray(a, np.float64), requires_grad=grad)


def _sym(a):
    return (a + dj.transpose(a, -1, -2)) * 0.5


def test_values_against_numpy():
    np.testing.assert_allclose(LA.inv(_t(M)).numpy(), np.linalg.inv(M), rtol=1e-10)
    np.testing.assert_allclose(LA.det(_t(M)).numpy(), np.linalg.det(M), rtol=1e-10)
    sign, logabs = LA.slogdet(_t(M))
    np.testing.assert_allclose(sign.numpy() * np.exp(logabs.numpy()), np.linalg.det(M),
                               rtol=1e-10)
    np.testing.assert_allclose(LA.solve(_t(M), _t(B)).numpy(), np.linalg.solve(M, B),
                               rtol=1e-10)
    x = LA.solve(_t(M), _t(B[..., 0]))  # a batch of vectors
    np.testing.assert_allclose(np.einsum("bij,bj->bi", M, x.numpy()), B[..., 0], rtol=1e-10)
    L = LA.cholesky(_t(SPD)).numpy()
    np.testing.assert_allclose(L @ np.swapaxes(L, -1, -2), SPD, rtol=1e-10)
    assert np.allclose(np.triu(L[0], 1), 0)
    w, v = LA.eigh(_t(SPD))
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(SPD), rtol=1e-10)
    np.testing.assert_allclose(v.numpy() @ (w.numpy()[..., None] * np.swapaxes(v.numpy(), -1,
                                                                                 -2)), SPD,
                               rtol=1e-10)
    u, s, vh = LA.svd(_t(TALL), full_matrices=False)
    np.testing.assert_allclose((u.numpy() * s.numpy()[..., None, :]) @ vh.numpy(), TALL,
                               atol=1e-12)
    np.testing.assert_allclose(LA.svdvals(_t(TALL)).numpy(),
                               np.linalg.svd(TALL, compute_uv=False), rtol=1e-10)
    q, r = LA.qr(_t(TALL))
    np.testing.assert_allclose(q.numpy() @ r.numpy(), TALL, atol=1e-12)
    np.testing.assert_allclose(LA.pinv(_t(TALL)).numpy(), np.linalg.pinv(TALL), rtol=1e-9)


def test_norms_against_numpy():
    v, m = RNG.normal(size=5), RNG.normal(size=(3, 4))
    for ord in (2, 1, 3, math.inf, -math.inf, 0):
        assert LA.vector_norm(_t(v), ord).item() == pytest.approx(np.linalg.norm(v, ord))
    for ord in ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf):
        assert LA.matrix_norm(_t(m), ord).item() == pytest.approx(np.linalg.norm(m, ord))
    assert LA.norm(_t(m)).item() == pytest.approx(np.linalg.norm(m))
    np.testing.assert_allclose(LA.norm(_t(m), dim=1).numpy(), np.linalg.norm(m, axis=1))
    assert LA.matrix_norm(_t(M), keepdim=True).shape == (2, 1, 1)
    assert LA.vector_norm(dj.zeros(3, dtype=dj.float64)).item() == 0.0


def test_zero_norm_has_a_zero_gradient():
    x = dj.zeros(3, dtype=dj.float64, requires_grad=True)
    LA.vector_norm(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)


def test_lstsq_and_its_extras():
    b = RNG.normal(size=(4, 2))
    out = LA.lstsq(_t(TALL[0]), _t(b))
    want, res, rank, _ = np.linalg.lstsq(TALL[0], b, rcond=None)
    np.testing.assert_allclose(out.solution.numpy(), want, rtol=1e-9)
    np.testing.assert_allclose(out.residuals.numpy(), res, rtol=1e-9)
    assert int(out.rank.item()) == rank == 3


GRADCHECKS = {
    "inv": (lambda a: LA.inv(a), [M[0]]),
    "det": (lambda a: LA.det(a), [M]),
    "slogdet": (lambda a: LA.slogdet(a)[1], [M]),
    "solve": (lambda a, b: LA.solve(a, b), [M, B]),
    "cholesky": (lambda a: LA.cholesky(_sym(a) + dj.tensor(3 * np.eye(3))), [M]),
    "eigh_values": (lambda a: LA.eigh(_sym(a))[0], [SPD]),
    "eigh_vectors": (lambda a: LA.eigh(_sym(a))[1] ** 2, [SPD]),  # sign-free
    "svdvals": (lambda a: LA.svdvals(a), [TALL]),
    "svd_u": (lambda a: LA.svd(a, full_matrices=False)[0] ** 2, [TALL[0]]),
    "svd_vh": (lambda a: LA.svd(a, full_matrices=False)[2] ** 2, [TALL[0]]),
    "qr": (lambda a: LA.qr(a)[0][..., :3, :] * 2 + LA.qr(a)[1], [TALL]),
    "pinv": (lambda a: LA.pinv(a), [TALL[0]]),
    "matrix_norm_nuc": (lambda a: LA.matrix_norm(a, "nuc"), [TALL]),
    "vector_norm_3": (lambda a: LA.vector_norm(a, 3, dim=-1), [TALL]),
}


@pytest.mark.parametrize("name", sorted(GRADCHECKS))
def test_float64_gradients(name):
    fn, arrays = GRADCHECKS[name]
    assert gradcheck(fn, [_t(a, grad=True) for a in arrays])


def test_decompositions_in_a_static_graph():
    g = dj.Graph()
    with g.as_default():
        a = dj.placeholder([None, 3, 3], dj.float64)
        loss = dj.sum(LA.inv(a)) + dj.sum(LA.det(a)) + dj.sum(LA.eigh(_sym(a))[0])
        grad = dj.gradients(loss, [a])[0]
    eager = _t(M, grad=True)
    (dj.sum(LA.inv(eager)) + dj.sum(LA.det(eager)) + dj.sum(LA.eigh(_sym(eager))[0])).backward()
    for level in (0, 2):
        got = dj.Session(g, optimize=level).run(grad, {a: M})
        np.testing.assert_allclose(got, eager.grad.numpy(), rtol=1e-10)


def test_errors_name_the_function():
    with pytest.raises(dj.ShapeError, match="linalg.inv.*square"):
        LA.inv(_t(TALL))
    with pytest.raises(dj.DTypeError, match="linalg.det"):
        LA.det(dj.tensor([[1, 2], [3, 4]]))
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        LA.svd(_t(TALL))
    with pytest.raises(dj.ShapeError, match="linalg.solve"):
        LA.solve(_t(M), _t(RNG.normal(size=(2, 4, 1))))


TORCH_CASES = {
    "inv": (lambda L, t: L.inv(t[0]), [M]),
    "det": (lambda L, t: L.det(t[0]), [M]),
    "slogdet": (lambda L, t: L.slogdet(t[0])[1], [M]),
    "solve": (lambda L, t: L.solve(t[0], t[1]), [M, B]),
    "cholesky": (lambda L, t: L.cholesky(t[0] @ t[0].transpose(-1, -2) + 3 * t[1]),
                 [M, np.eye(3)]),
    "eigh": (lambda L, t: L.eigh((t[0] + t[0].transpose(-1, -2)) / 2)[1] ** 2 * 3
             + L.eigh((t[0] + t[0].transpose(-1, -2)) / 2)[0][..., None], [SPD]),
    "svd": (lambda L, t: L.svd(t[0], full_matrices=False)[0][..., :3, :] ** 2
            + L.svd(t[0], full_matrices=False)[2] ** 2
            + L.svd(t[0], full_matrices=False)[1][..., None], [TALL]),
    "qr": (lambda L, t: L.qr(t[0])[0][..., :3, :] + L.qr(t[0])[1], [TALL]),
    "pinv": (lambda L, t: L.pinv(t[0]), [TALL]),
    "norm_nuc": (lambda L, t: L.matrix_norm(t[0], "nuc"), [TALL]),
    "norm_2": (lambda L, t: L.norm(t[0], 2, dim=(-2, -1)), [TALL]),
    "vector_norm_inf": (lambda L, t: L.vector_norm(t[0], float("inf"), dim=1), [TALL]),
}


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_against_pytorch(name):
    torch = pytest.importorskip("torch")
    fn, arrays = TORCH_CASES[name]
    ours = [_t(a, grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = fn(LA, ours), fn(torch.linalg, theirs)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-9,
                               atol=1e-12)
    w = RNG.uniform(-1, 1, ref.shape)
    (out * dj.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=1e-10)
