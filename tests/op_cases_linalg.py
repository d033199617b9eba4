"""Cases of the linear-algebra primitives (ops/linalg_decompositions.py) for the
registry-driven op tests; merged into `op_cases.CASES`. Symmetric inputs are symmetrized inside
the case (eigh reads one triangle) and eigen/singular vectors enter squared (their signs are
arbitrary)."""

from __future__ import annotations

import numpy as np
from op_cases import Case

import dongjing as dj

LA = dj.linalg


def _r(*shape, seed=0):
    return np.random.default_rng(seed + 31).uniform(-1.0, 1.0, shape)


def _well(*batch, n=3, seed=0):
    """Well-conditioned square matrices (diagonally dominant)."""
    return _r(*batch, n, n, seed=seed) + 2.5 * np.eye(n)


def _sym(a):
    return (a + dj.transpose(a, -1, -2)) * 0.5


def _positive(a):
    """A symmetric positive-definite matrix from any square `a` of values in [-1, 1]: its
    symmetric part plus 3 on the diagonal (made from `a`, so on its device and graph)."""
    ones = dj.ops.ones_like(a)  # the op: on the device of `a`
    diagonal = dj.cast(dj.eq(dj.cumsum(ones, -1), dj.cumsum(ones, -2)), dj.float64)
    return _sym(a) + diagonal * 3.0


_SPREAD = np.diag([1.0, 2.5, 4.5]) + 0.2 * _r(3, 3, seed=4)  # distinct eigenvalues
_TALL = _r(4, 3, seed=5) + np.vstack([np.diag([3.0, 2.0, 1.0]), np.zeros((1, 3))])

LINALG_CASES = {
    "linalg_inv": [Case(LA.inv, (_well(),)), Case(LA.inv, (_well(2, seed=1),), "batched")],
    "linalg_det": [Case(LA.det, (_well(2),), "batched")],
    "linalg_logabsdet": [Case(lambda a: LA.slogdet(a)[1], (_well(),))],
    "linalg_det_sign": [Case(lambda a: LA.slogdet(a)[0], (_well(2),), grad=False)],
    "linalg_solve": [Case(LA.solve, (_well(), _r(3, 2, seed=2))),
                     Case(LA.solve, (_well(2), _r(3, 2, seed=3)), "broadcast batch")],
    "linalg_cholesky": [Case(lambda a: LA.cholesky(_positive(a)), (_r(3, 3),))],
    "linalg_eigvalsh": [Case(lambda a: LA.eigvalsh(_sym(a)), (_SPREAD,))],
    "linalg_eigh_vectors": [Case(lambda a: LA.eigh(_sym(a))[1] ** 2, (_SPREAD,))],
    "linalg_svdvals": [Case(LA.svdvals, (_TALL,))],
    "linalg_svd_u": [Case(lambda a: LA.svd(a, full_matrices=False)[0] ** 2, (_TALL,))],
    "linalg_svd_vh": [Case(lambda a: LA.svd(a, full_matrices=False)[2] ** 2, (_TALL,))],
    "linalg_qr_q": [Case(lambda a: LA.qr(a)[0], (_TALL,))],
    "linalg_qr_r": [Case(lambda a: LA.qr(a)[1], (_TALL,))],
}
