"""PyTorch's statistics and counting functions under their PyTorch names: `cov`, `corrcoef`
(differentiable compositions), and `bincount`, `histc`, `searchsorted`, `bucketize`,
`unique_consecutive`. The counting ones whose output size depends on the values (`bincount`
without weights, `histc`, `unique_consecutive`) need eager values."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes
from ..errors import ArgumentError, ShapeError
from ..tensor.out_argument import accepts_out
from ..tensor.transfer import constant_like
from .compare import ge, gt
from .convert import as_tensor
from .elementwise import cast, clip, div, maximum, mul, sqrt, sub
from .reduce import mean
from .reduce import sum as _sum
from .scatter import scatter_add
from .shape import reshape, unsqueeze
from .torch_shape_more import diagonal

if TYPE_CHECKING:
    from ..tensor import Tensor
    from ..types import TensorLike

__all__ = ["cov", "corrcoef", "bincount", "histc", "searchsorted", "bucketize",
           "unique_consecutive"]


def _dim(x, dim):
    return dim % x.ndim if x.ndim else 0


def cov(input: TensorLike, *, correction: int = 1, fweights: TensorLike | None = None,
        aweights: TensorLike | None = None) -> Tensor:
    """The covariance matrix of the variables in the rows of `input` (observations in
    columns), with frequency and observation weights as PyTorch's."""
    x = as_tensor(input)
    if x.ndim > 2:
        raise ShapeError(f"cov: expects at most 2 dims, got shape {x.shape}")
    x = reshape(x, (1, -1)) if x.ndim < 2 else x
    if x.dtype.kind != "f":
        x = cast(x, dtypes.default_float)
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = cast(as_tensor(fweights), x.dtype)
    if aweights is not None:
        a = cast(as_tensor(aweights), x.dtype)
        w = a if w is None else mul(w, a)
    if w is None:
        avg = mean(x, 1, True)
        total = float(n)
        norm = total - correction
    else:
        total = _sum(w)
        avg = div(_sum(mul(x, w), 1, True), total)
        if correction == 0:
            norm = total
        elif aweights is None:
            norm = total - correction
        else:
            norm = total - correction * div(_sum(mul(w, cast(as_tensor(aweights), x.dtype))),
                                            total)
    centered = sub(x, avg)
    weighted = centered if w is None else mul(centered, w)
    out = div(weighted.matmul(centered.T), maximum(as_tensor(norm, x), 0.0)
              if not isinstance(norm, float) else max(norm, 0.0))
    return out.squeeze() if as_tensor(input).ndim < 2 else out


def corrcoef(input: TensorLike) -> Tensor:
    """Pearson correlation coefficients of the rows of `input`, clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return div(c, c)
    d = sqrt(diagonal_of(c))
    out = div(div(c, unsqueeze(d, 1)), unsqueeze(d, 0))
    return clip(out, -1.0, 1.0)


def diagonal_of(c):
    return diagonal(c)


def _values(name, t):
    t = as_tensor(t)
    return t._value(name)


def bincount(input: TensorLike, weights: TensorLike | None = None, minlength: int = 0) -> Tensor:
    """How often each non-negative integer occurs (summing `weights` instead of counting)."""
    x = as_tensor(input)
    data = _values("bincount", x)
    if data.ndim != 1 or x.dtype.kind not in "iu" or (data.size and data.min() < 0):
        raise ShapeError(f"bincount: expects a 1-d tensor of non-negative integers, got "
                         f"{x.dtype} of shape {x.shape}")
    size = max(int(data.max()) + 1 if data.size else 0, int(minlength))
    if weights is None:
        return constant_like(np.bincount(data, minlength=size).astype(np.int64), x)
    w = as_tensor(weights)
    zeros = constant_like(np.zeros(size, w.dtype if w.dtype.kind == "f" else np.float64), x)
    return scatter_add(zeros, 0, x, cast(w, zeros.dtype))


@accepts_out
def histc(input: TensorLike, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """A histogram of `bins` equal bins over [min, max] (the data's range when both are 0);
    values outside are ignored."""
    x = as_tensor(input)
    data = _values("histc", x).astype(np.float64).ravel()
    lo, hi = float(min), float(max)
    if lo == hi and data.size:
        lo, hi = float(data.min()), float(data.max())
    if lo == hi:
        lo, hi = lo - 1.0, hi + 1.0
    inside = data[(data >= lo) & (data <= hi)]
    idx = np.minimum(((inside - lo) * bins / (hi - lo)).astype(np.int64), bins - 1)
    return constant_like(np.bincount(idx, minlength=bins).astype(x.dtype), x)


@accepts_out(after="side")
def searchsorted(sorted_sequence, input, *, out_int32: bool = False, right: bool = False,
                 side=None, sorter=None):
    """Where each value of `input` would be inserted into the sorted last dim of
    `sorted_sequence` to keep it sorted (`right`/`side="right"`: after equal values)."""
    seq, vals = as_tensor(sorted_sequence), as_tensor(input)
    if side is not None:
        if side not in ("left", "right") or (right and side == "left"):
            raise ArgumentError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
        right = side == "right"
    if sorter is not None:
        seq = seq.gather(-1, as_tensor(sorter))
    before = gt if not right else ge  # counts elements < value (left) or <= value (right)
    if seq.ndim == 1:
        hits = before(unsqueeze(vals, -1), seq)
        out = _sum(cast(hits, dtypes.int64), -1)
    else:
        hits = before(unsqueeze(vals, -1), unsqueeze(seq, -2))
        out = _sum(cast(hits, dtypes.int64), -1)
    return cast(out, dtypes.int32) if out_int32 else out


@accepts_out
def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False):
    """The index of the bucket of each value among sorted 1-d `boundaries`."""
    b = as_tensor(boundaries)
    if b.ndim != 1:
        raise ShapeError(f"bucketize: boundaries must be 1-d, got shape {b.shape}")
    return searchsorted(b, input, out_int32=out_int32, right=right)


def unique_consecutive(input: TensorLike, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> Tensor | tuple[Tensor, ...]:
    """The input with runs of equal consecutive elements collapsed (flattened when `dim` is
    None), with the inverse indices and run lengths on request."""
    x = as_tensor(input)
    data = _values("unique_consecutive", x)
    if dim is None:
        flat = data.ravel()
        starts = np.concatenate([[True], flat[1:] != flat[:-1]]) if flat.size else \
            np.zeros(0, bool)
        values = constant_like(flat[starts], x)
        inverse = (np.cumsum(starts) - 1).reshape(data.shape)
    else:
        d = _dim(x, dim)
        moved = np.moveaxis(data, d, 0)
        change = np.array([True] + [not np.array_equal(moved[i], moved[i - 1])
                                    for i in range(1, moved.shape[0])])
        values = constant_like(np.moveaxis(moved[change], 0, d), x)
        inverse = np.cumsum(change) - 1
    counts = np.diff(np.append(np.flatnonzero(np.concatenate(
        [[True], np.diff(inverse.ravel()) != 0]) if inverse.size else []), inverse.size
        if dim is None else len(inverse)))
    out = [values]
    if return_inverse:
        out.append(constant_like(inverse.astype(np.int64), x))
    if return_counts:
        out.append(constant_like(counts.astype(np.int64), x))
    return out[0] if len(out) == 1 else tuple(out)
