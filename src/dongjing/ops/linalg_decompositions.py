"""Matrix functions and decompositions as primitives (`torch.linalg`'s core): inv, det,
slogdet, solve, cholesky, eigh, svd, qr, each over the last two dims with any batch dims.

The op table's ops have one output, so a decomposition is one op per factor (eigh's values and
vectors, svd's U, S and Vh, qr's Q and R), each recomputing the factorization. Every gradient
is written with dongjing ops (the standard matrix-calculus results: Giles 2008, Murray 2016,
Walter & Lehmann 2018), so they differentiate again and build graph nodes. The eigenvector and
singular-vector gradients assume distinct eigenvalues / singular values, as PyTorch's do."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes
from ..core import infer as inf
from ..core.registry import Onnx, Spec, define
from ..dispatch import apply
from ..dtypes import is_floating
from ..errors import DTypeError, ShapeError
from .compare import eq, logical_not
from .convert import as_tensor
from .elementwise import add, div, mul, neg, ones_like, sub, where
from .layout import tril
from .linalg import matmul
from .scan import cumsum
from .shape import transpose, unsqueeze

if TYPE_CHECKING:
    from ..tensor import Tensor
    from ..types import TensorLike

_NO_ONNX = "the ONNX standard (default domain) has no such operator"


def _mT(x):  # noqa: N802 (PyTorch's name: the transpose of the last two dims)
    return transpose(x, -2, -1)


def _float(name: str, x: Spec) -> None:
    if not is_floating(x.dtype):
        raise DTypeError(f"linalg.{name}: expects a floating point tensor, got {x.dtype}")


def _square_infer(name: str):
    def infer(x: Spec):
        _float(name, x)
        if len(x.shape) < 2 or None not in x.shape[-2:] and x.shape[-1] != x.shape[-2]:
            raise ShapeError(f"linalg.{name}: expects square matrices (*, n, n), got shape "
                             f"{inf.fmt(x.shape)}")
        return x.shape, x.dtype

    return infer


def _batch_infer(name: str, drop: int):
    """Square input; the result drops the last `drop` dims (det: 2, eigvalsh: 1)."""
    square = _square_infer(name)

    def infer(x: Spec):
        square(x)
        return x.shape[:len(x.shape) - drop], x.dtype

    return infer


def _host(xp, value):
    """A factor taken out of a result tuple, as an array of the backend."""
    return xp.asarray(value)


# --- inv, det, slogdet ------------------------------------------------------------------------
_inv = define("linalg_inv", forward=lambda xp, x: xp.linalg.inv(x), infer=_square_infer("inv"),
              grads=(lambda g, x, *, out: neg(matmul(matmul(_mT(out), g), _mT(out))),),
              grad_name="LinalgInvExBackward0", onnx=None, onnx_reason=_NO_ONNX)


def inv(A: TensorLike) -> Tensor:
    """The inverse of each square matrix of `A` (*, n, n)."""
    return apply(_inv, as_tensor(A))


def _scalar_grad(g, x):
    """g (*,) lifted to (*, 1, 1)."""
    return unsqueeze(unsqueeze(g, -1), -1)


_det = define("linalg_det", forward=lambda xp, x: xp.linalg.det(x), infer=_batch_infer("det", 2),
              grads=(lambda g, x, *, out: mul(_scalar_grad(mul(g, out), x), _mT(inv(x))),),
              grad_name="LinalgDetBackward0", onnx=Onnx("Det"))
_logabsdet = define(
    "linalg_logabsdet", forward=lambda xp, x: _host(xp, xp.linalg.slogdet(x)[1]),
    infer=_batch_infer("slogdet", 2),
    grads=(lambda g, x: mul(_scalar_grad(g, x), _mT(inv(x))),),
    grad_name="LinalgSlogdetBackward0", onnx=None, onnx_reason=_NO_ONNX)
_det_sign = define(
    "linalg_det_sign", forward=lambda xp, x: _host(xp, xp.linalg.slogdet(x)[0]),
    infer=_batch_infer("slogdet", 2), onnx=None, onnx_reason=_NO_ONNX,
    doc="The sign of the determinant (piecewise constant: no gradient).")


def det(A: TensorLike) -> Tensor:
    """The determinant of each square matrix of `A`."""
    return apply(_det, as_tensor(A))


def slogdet(A: TensorLike) -> tuple[Tensor, Tensor]:
    """(sign, log|det|) of each square matrix of `A` (log|det| carries the gradient)."""
    A = as_tensor(A)
    return apply(_det_sign, A), apply(_logabsdet, A)


# --- solve ------------------------------------------------------------------------------------
def _solve_infer(a: Spec, b: Spec):
    _float("solve", a)
    _square_infer("solve")(a)
    if len(b.shape) < 2 or not _fits(a.shape[-1], b.shape[-2]):
        raise ShapeError(f"linalg.solve: A of shape {inf.fmt(a.shape)} and B of shape "
                         f"{inf.fmt(b.shape)} do not fit (B: (*, n, k))")
    batch = inf.broadcast("linalg.solve", a.shape[:-2], b.shape[:-2])
    return batch + tuple(b.shape[-2:]), dtypes.promote(a.dtype, b.dtype)


def _fits(a, b) -> bool:
    return a is None or b is None or a == b


def _solve_grad_b(g, a, b):
    return solve_matrix(_mT(a), g)


def _solve_grad_a(g, a, b, *, out):
    return neg(matmul(solve_matrix(_mT(a), g), _mT(out)))


def _solve_forward(xp, a, b):
    # CuPy's solve does not broadcast batch dimensions (NumPy's does): broadcast them first
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if a.shape[:-2] != batch:
        a = xp.broadcast_to(a, batch + a.shape[-2:])
    if b.shape[:-2] != batch:
        b = xp.broadcast_to(b, batch + b.shape[-2:])
    return xp.linalg.solve(a, b)


_solve = define("linalg_solve", forward=_solve_forward,
                infer=_solve_infer, grads=(_solve_grad_a, _solve_grad_b),
                grad_name="LinalgSolveExBackward0", onnx=None, onnx_reason=_NO_ONNX)


def solve_matrix(A: TensorLike, B: TensorLike) -> Tensor:
    """X with A X = B for square A (*, n, n) and B (*, n, k)."""
    return apply(_solve, as_tensor(A), as_tensor(B))


# --- cholesky ---------------------------------------------------------------------------------
def _phi(x):
    """The lower triangle of `x` with its diagonal halved."""
    return sub(tril(x), mul(_diagonal_part(x), 0.5))


def _diagonal_mask(square):
    """True on the diagonal of each matrix (built from `square` itself, so it lives on the
    same device and in the same graph): column number == row number."""
    ones = ones_like(square)
    return eq(cumsum(ones, -1), cumsum(ones, -2))


def _diagonal_part(x):
    return where(_diagonal_mask(x), x, as_tensor(0.0, x))


def _cholesky_grad(g, x, *, out):
    # A = L L^T:  S = L^-T phi(L^T G) L^-1, symmetrized
    l_inv = inv(out)
    s = matmul(matmul(_mT(l_inv), _phi(matmul(_mT(out), g))), l_inv)
    return mul(add_sym(s), 0.5)


def add_sym(x):
    """x + x^T over the last two dims."""
    return add(x, _mT(x))


_cholesky = define("linalg_cholesky", forward=lambda xp, x: xp.linalg.cholesky(x),
                   infer=_square_infer("cholesky"), grads=(_cholesky_grad,),
                   grad_name="LinalgCholeskyExBackward0", onnx=None, onnx_reason=_NO_ONNX)


def cholesky(A: TensorLike, *, upper: bool = False) -> Tensor:
    """The lower Cholesky factor L of each symmetric positive-definite matrix (A = L L^T);
    its transpose with `upper=True`."""
    factor = apply(_cholesky, as_tensor(A))
    return _mT(factor) if upper else factor


# --- eigh -------------------------------------------------------------------------------------
def _pair_gaps(values):
    """F with F[i, j] = 1 / (values[j] - values[i]) off the diagonal, 0 on it."""
    gaps = sub(unsqueeze(values, -2), unsqueeze(values, -1))
    off = _off_diagonal(gaps)
    safe = where(off, gaps, as_tensor(1.0, gaps))
    return where(off, div(as_tensor(1.0, gaps), safe), as_tensor(0.0, gaps))


def _off_diagonal(square):
    return logical_not(_diagonal_mask(square))


def _eigvalsh_grad(g, x):
    vectors = eigh_vectors(x)
    return matmul(mul(vectors, unsqueeze(g, -2)), _mT(vectors))


def _eigh_vectors_grad(g, x, *, out):
    values = apply(_eigvalsh, x)
    inner = mul(_pair_gaps(values), matmul(_mT(out), g))
    return matmul(matmul(out, inner), _mT(out))


_eigvalsh = define("linalg_eigvalsh", forward=lambda xp, x: xp.linalg.eigvalsh(x),
                   infer=_batch_infer("eigh", 1), grads=(_eigvalsh_grad,),
                   grad_name="LinalgEighBackward0", onnx=None, onnx_reason=_NO_ONNX)
_eigh_vectors = define(
    "linalg_eigh_vectors", forward=lambda xp, x: _host(xp, xp.linalg.eigh(x)[1]),
    infer=_square_infer("eigh"), grads=(_eigh_vectors_grad,), grad_name="LinalgEighBackward0",
    onnx=None, onnx_reason=_NO_ONNX)


def eigh_vectors(A):
    return apply(_eigh_vectors, as_tensor(A))


def eigh(A: TensorLike, UPLO: str = "L") -> tuple[Tensor, Tensor]:  # noqa: N803 (PyTorch's name)
    """(eigenvalues ascending, eigenvectors as columns) of symmetric matrices, read from their
    lower triangle (as NumPy and PyTorch do by default)."""
    if UPLO != "L":
        raise ValueError("linalg.eigh: only UPLO='L' is supported")
    A = as_tensor(A)
    return apply(_eigvalsh, A), apply(_eigh_vectors, A)


def eigvalsh(A: TensorLike, UPLO: str = "L") -> Tensor:  # noqa: N803
    """The eigenvalues (ascending) of symmetric matrices."""
    return eigh(A, UPLO)[0]


# --- svd --------------------------------------------------------------------------------------
def _svd_infer(part: str):
    def infer(x: Spec):
        _float("svd", x)
        if len(x.shape) < 2:
            raise ShapeError(f"linalg.svd: expects matrices (*, m, n), got shape "
                             f"{inf.fmt(x.shape)}")
        m, n = x.shape[-2:]
        k = None if m is None or n is None else min(m, n)
        batch = tuple(x.shape[:-2])
        shape = {"u": batch + (m, k), "s": batch + (k,), "vh": batch + (k, n)}[part]
        return shape, x.dtype

    return infer


def _svd_parts(x):
    return apply(_svd_u, x), apply(_svdvals, x), apply(_svd_vh, x)


def _svd_grad(gu, gs, gvh, x):
    """The gradient of the thin SVD (distinct nonzero singular values) from the gradients of
    its factors (None: no gradient through that factor)."""
    u, s, vh = _svd_parts(x)
    v = _mT(vh)
    s_row = unsqueeze(s, -2)  # (*, 1, k)
    total = None

    def plus(a, b):
        return b if a is None else a + b

    if gs is not None:
        total = matmul(mul(u, unsqueeze(gs, -2)), vh)
    if gu is not None or gvh is not None:
        f = _pair_gaps(mul(s, s))  # 1 / (s_j^2 - s_i^2)
        inner = None
        if gu is not None:
            ut_gu = matmul(_mT(u), gu)
            inner = mul(mul(f, sub(ut_gu, _mT(ut_gu))), s_row)
            # the part of gU outside U's column space
            outside = sub(gu, matmul(u, ut_gu))
            total = plus(total, matmul(div(outside, s_row), vh))
        if gvh is not None:
            gv = _mT(gvh)
            vt_gv = matmul(vh, gv)
            term = mul(_mT(s_row), mul(f, sub(vt_gv, _mT(vt_gv))))
            inner = plus(inner, term)
            outside = sub(gv, matmul(v, vt_gv))
            total = plus(total, matmul(u, _mT(div(outside, s_row))))
        total = plus(total, matmul(matmul(u, inner), vh))
    return total


_svdvals = define("linalg_svdvals", forward=lambda xp, x: xp.linalg.svd(x, compute_uv=False),
                  infer=_svd_infer("s"), grads=(lambda g, x: _svd_grad(None, g, None, x),),
                  grad_name="LinalgSvdBackward0", onnx=None, onnx_reason=_NO_ONNX)
_svd_u = define(
    "linalg_svd_u", forward=lambda xp, x: _host(xp, xp.linalg.svd(x, full_matrices=False)[0]),
    infer=_svd_infer("u"), grads=(lambda g, x: _svd_grad(g, None, None, x),),
    grad_name="LinalgSvdBackward0", onnx=None, onnx_reason=_NO_ONNX)
_svd_vh = define(
    "linalg_svd_vh", forward=lambda xp, x: _host(xp, xp.linalg.svd(x, full_matrices=False)[2]),
    infer=_svd_infer("vh"), grads=(lambda g, x: _svd_grad(None, None, g, x),),
    grad_name="LinalgSvdBackward0", onnx=None, onnx_reason=_NO_ONNX)


def svd(A: TensorLike, full_matrices: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """(U, S, Vh) with A = U diag(S) Vh; only the thin form (`full_matrices=False`) is
    provided, and asking for the full one says so."""
    if full_matrices:
        raise NotImplementedError("linalg.svd: only full_matrices=False (the thin SVD) is "
                                  "supported; pass full_matrices=False")
    return _svd_parts(as_tensor(A))


def svdvals(A: TensorLike) -> Tensor:
    """The singular values of each matrix, in decreasing order."""
    return apply(_svdvals, as_tensor(A))


# --- qr ---------------------------------------------------------------------------------------
def _qr_infer(part: str):
    def infer(x: Spec):
        _float("qr", x)
        if len(x.shape) < 2:
            raise ShapeError(f"linalg.qr: expects matrices (*, m, n), got {inf.fmt(x.shape)}")
        m, n = x.shape[-2:]
        if None not in (m, n) and m < n:
            raise ShapeError(f"linalg.qr: matrices with more columns than rows ({m} x {n}) "
                             "are not supported (their QR is not differentiable here)")
        batch = tuple(x.shape[:-2])
        return (batch + (m, n) if part == "q" else batch + (n, n)), x.dtype

    return infer


def _copy_lower_to_upper(x):
    lower = tril(x, -1)
    return lower + _mT(lower) + _diagonal_part(x)


def _qr_grad(gq, gr, x):
    # A = QR (m >= n): M = R gR^T - gQ^T Q;  gA = (gQ + Q copyltu(M)) R^-T
    q, r = apply(_qr_q, x), apply(_qr_r, x)
    gq = gq if gq is not None else mul(q, 0.0)
    gr = gr if gr is not None else mul(r, 0.0)
    m = sub(matmul(r, _mT(gr)), matmul(_mT(gq), q))
    return matmul(gq + matmul(q, _copy_lower_to_upper(m)), _mT(inv(r)))


_qr_q = define("linalg_qr_q", forward=lambda xp, x: _host(xp, xp.linalg.qr(x)[0]),
               infer=_qr_infer("q"), grads=(lambda g, x: _qr_grad(g, None, x),),
               grad_name="LinalgQrBackward0", onnx=None, onnx_reason=_NO_ONNX)
_qr_r = define("linalg_qr_r", forward=lambda xp, x: _host(xp, xp.linalg.qr(x)[1]),
               infer=_qr_infer("r"), grads=(lambda g, x: _qr_grad(None, g, x),),
               grad_name="LinalgQrBackward0", onnx=None, onnx_reason=_NO_ONNX)


def qr(A: TensorLike, mode: str = "reduced") -> tuple[Tensor, Tensor]:
    """(Q, R) with A = QR, Q's columns orthonormal, R upper triangular (the reduced form)."""
    if mode != "reduced":
        raise NotImplementedError(f"linalg.qr: only mode='reduced' is supported, got {mode!r}")
    A = as_tensor(A)
    return apply(_qr_q, A), apply(_qr_r, A)
