"""`vector_norm`, `matrix_norm` and `norm` with PyTorch's `ord` conventions; every norm's
gradient at zero is zero (not NaN), as PyTorch's is."""

from __future__ import annotations

import math

from .. import ops
from ..core.torch_args import dim_aliases
from ..dtypes import is_floating
from ..errors import ShapeError
from ..ops.convert import as_tensor
from ..ops.linalg_decompositions import svdvals
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out


def _dims(x: Tensor, dim) -> tuple:
    if dim is None:
        return tuple(range(x.ndim))
    return tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)


@accepts_out
@dim_aliases
def vector_norm(x, ord: float = 2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """(sum |x|^ord)^(1/ord) over `dim` (all elements when None); ord inf / -inf: the largest /
    smallest |x|; ord 0: the count of nonzero elements."""
    x = as_tensor(x)
    if dtype is not None:
        x = ops.cast(x, dtype)
    if not is_floating(x.dtype):
        raise ShapeError(f"linalg.vector_norm: expects a floating point tensor, got {x.dtype}")
    dims = _dims(x, dim)
    a = ops.abs(x)
    if ord == math.inf:
        return ops.amax(a, dims, keepdim=keepdim)
    if ord == -math.inf:
        return ops.amin(a, dims, keepdim=keepdim)
    if ord == 0:
        return ops.sum(ops.cast(ops.ne(x, 0.0), x.dtype), dims, keepdim=keepdim)
    if ord == 1:
        return ops.sum(a, dims, keepdim=keepdim)
    total = ops.sum(x * x if ord == 2 else a ** ord, dims, keepdim=keepdim)
    positive = ops.gt(total, 0.0)
    safe = ops.where(positive, total, ops.ones_like(total))
    root = ops.sqrt(safe) if ord == 2 else safe ** (1.0 / ord)
    return ops.where(positive, root, ops.zeros_like(total))


@accepts_out
@dim_aliases
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None) -> Tensor:
    """Norms of the matrices in dims `dim`: "fro", "nuc" (sum of singular values), 2 / -2
    (largest / smallest singular value), 1 / -1 (max / min column sum of |A|), inf / -inf (max
    / min row sum of |A|)."""
    A = as_tensor(A)
    if dtype is not None:
        A = ops.cast(A, dtype)
    if A.ndim < 2 or len(dim) != 2:
        raise ShapeError(f"linalg.matrix_norm: expects matrices and two dims, got shape "
                         f"{A.shape} and dim {dim}")
    rows, cols = (d % A.ndim for d in dim)
    if ord == "fro":
        return vector_norm(A, 2, (rows, cols), keepdim)
    moved = ops.movedim(A, (rows, cols), (-2, -1))
    if ord in ("nuc", 2, -2):
        s = svdvals(moved)
        out = ops.sum(s, -1) if ord == "nuc" else (ops.amax(s, -1) if ord == 2 else
                                                   ops.amin(s, -1))
    elif ord in (1, -1, math.inf, -math.inf):
        sums = ops.sum(ops.abs(moved), -2 if abs(ord) == 1 else -1)
        out = ops.amax(sums, -1) if ord > 0 else ops.amin(sums, -1)
    else:
        raise ValueError(f"linalg.matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or "
                         f"-inf, got {ord!r}")
    if keepdim:
        for d in sorted((rows, cols)):
            out = ops.unsqueeze(out, d)
    return out


@accepts_out(after="keepdim")
@dim_aliases
def norm(input, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """A vector norm (1-d input or an int `dim`) or a matrix norm (2-d input or a pair of
    dims); with neither `ord` nor `dim`, the 2-norm of all elements."""
    A = as_tensor(input)
    if ord is None:
        if dim is None or isinstance(dim, int) or len(dim) == 1:
            return vector_norm(A, 2, dim, keepdim, dtype=dtype)
        return matrix_norm(A, "fro", dim, keepdim, dtype=dtype)
    if isinstance(dim, int) or (dim is None and A.ndim == 1) or (
            dim is not None and len(dim) == 1):
        return vector_norm(A, ord, dim, keepdim, dtype=dtype)
    if dim is None and A.ndim != 2:
        raise ShapeError(f"linalg.norm: with ord={ord!r} and no dim the input must be 1-d or "
                         f"2-d, got shape {A.shape}")
    return matrix_norm(A, ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
