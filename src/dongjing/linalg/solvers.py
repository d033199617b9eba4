"""`solve`, `pinv` and `lstsq` over the decomposition primitives."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .. import ops
from ..errors import ShapeError
from ..ops.convert import as_tensor
from ..ops.linalg_decompositions import solve_matrix, svd
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out

if TYPE_CHECKING:
    from ..types import TensorLike


def _vector_rhs(A: Tensor, B: Tensor) -> bool:
    """PyTorch's rule: B is a batch of vectors when it is 1-d or has A's batch shape."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


@accepts_out
def solve(A: TensorLike, B: TensorLike, *, left: bool = True) -> Tensor:
    """X with A X = B (X A = B with `left=False`) for square invertible A; B (*, n, k) or a
    batch of vectors (*, n)."""
    A, B = as_tensor(A), as_tensor(B)
    if not left:
        return ops.transpose(solve(ops.transpose(A, -2, -1), ops.transpose(B, -2, -1)), -2, -1)
    if _vector_rhs(A, B):
        return ops.squeeze(solve_matrix(A, ops.unsqueeze(B, -1)), -1)
    return solve_matrix(A, B)


@accepts_out
def pinv(A: TensorLike, *, atol: float | None = None, rtol: float | None = None,
         hermitian: bool = False) -> Tensor:
    """The Moore-Penrose pseudo-inverse, from the thin SVD; singular values at or below
    max(atol, rtol * largest) count as zero (rtol defaults to eps * max(m, n) when neither is
    given). Its gradient needs distinct nonzero singular values."""
    A = as_tensor(A)
    u, s, vh = svd(A, full_matrices=False)
    if rtol is None:
        rtol = 0.0 if atol else float(np.finfo(A.dtype).eps) * max(A.shape[-2:])
    cutoff = ops.maximum(ops.amax(s, -1, keepdim=True) * rtol, float(atol or 0.0))
    keep = ops.gt(s, cutoff)
    safe = ops.where(keep, s, ops.ones_like(s))
    s_inv = ops.where(keep, 1.0 / safe, ops.zeros_like(s))
    return ops.matmul(ops.transpose(vh, -2, -1) * ops.unsqueeze(s_inv, -2),
                      ops.transpose(u, -2, -1))


class LstsqResult(NamedTuple):
    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


def lstsq(A, B, rcond=None, *, driver=None) -> LstsqResult:
    """The least-squares solution X of A X ~ B (`pinv(A) @ B`), with PyTorch's CPU default
    ("gelsy") extras: the squared residual of each column when A is tall and of full rank
    (else empty), the rank, and no singular values."""
    A, B = as_tensor(A), as_tensor(B)
    if A.ndim < 2 or B.ndim < 1 or A.shape[-2] != B.shape[-2 if B.ndim > 1 else -1]:
        raise ShapeError(f"linalg.lstsq: A of shape {A.shape} and B of shape {B.shape} do not "
                         "fit (B: (*, m, k) or (m,))")
    vector = B.ndim == 1
    rhs = ops.unsqueeze(B, -1) if vector else B
    m, n = A.shape[-2], A.shape[-1]
    s = svd(A.detach(), full_matrices=False)[1].numpy()
    tol = (rcond if rcond is not None else np.finfo(A.dtype).eps * max(m, n)) * s.max(-1,
                                                                                keepdims=True)
    rank = (s > tol).sum(-1)
    x = ops.matmul(pinv(A, rtol=rcond), rhs)
    if m > n and (rank == n).all():
        diff = ops.matmul(A, x) - rhs
        residuals = ops.sum(diff * diff, -2)
        residuals = ops.squeeze(residuals, -1) if vector else residuals
    else:
        residuals = Tensor._make(np.zeros((0,), A.dtype))
    solution = ops.squeeze(x, -1) if vector else x
    return LstsqResult(solution, residuals, Tensor._make(rank.astype(np.int64)),
                       Tensor._make(np.zeros((0,), A.dtype)))
