"""More of PyTorch's reductions and scans under their PyTorch names (`nansum`, `median`,
`kthvalue`, `quantile`, `mode`, `cummax`, `logcumsumexp`, `trapezoid`, `dist`, `renorm`, ...),
composed of the op table's primitives (sort, gather, cumsum, where, ...), so they differentiate,
trace and build graph nodes. `mode` needs values (it counts them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, overload

import numpy as np

from .. import dtypes
from ..core.torch_args import dim_aliases
from ..errors import ArgumentError, DTypeError
from ..tensor.out_argument import accepts_out
from ..tensor.transfer import constant_like
from .compare import eq, ge, gt, le, logical_not, logical_or, ne
from .convert import as_tensor
from .elementwise import abs as _abs
from .elementwise import (
    add,
    cast,
    clip,
    div,
    exp,
    log,
    mul,
    pow,
    sqrt,
    sub,
    where,
    zeros_like,
)
from .math import ceil, floor, floor_divide, isinf, isnan
from .math import round as round_
from .reduce import ValuesIndices, amax, amin
from .reduce import sum as _sum
from .scan import cumsum
from .shape import concat, reshape, unsqueeze
from .sorting import sort

if TYPE_CHECKING:
    from ..tensor import Tensor
    from ..types import Dim, DTypeLike, TensorLike

class MinMax(NamedTuple):
    """(min, max) of `aminmax`."""

    min: Tensor
    max: Tensor


def _dim(x, dim):
    return dim % x.ndim if x.ndim else 0


def nansum(input: TensorLike, dim: Dim = None, keepdim: bool = False, *,
           dtype: DTypeLike | None = None) -> Tensor:
    """The sum treating NaN as zero."""
    x = as_tensor(input)
    if dtype is not None:
        x = cast(x, dtype)
    clean = where(isnan(x), zeros_like(x), x) if x.dtype.kind == "f" else x
    return _sum(clean, dim, keepdim)


@accepts_out
@dim_aliases
def nanmean(input: TensorLike, dim: Dim = None, keepdim: bool = False, *,
            dtype: DTypeLike | None = None) -> Tensor:
    """The mean of the non-NaN elements."""
    x = as_tensor(input)
    if dtype is not None:
        x = cast(x, dtype)
    if x.dtype.kind != "f":
        raise DTypeError(f"nanmean: expects a floating point tensor, got {x.dtype}")
    count = _sum(cast(logical_not(isnan(x)), x.dtype), dim, keepdim)
    return div(nansum(x, dim, keepdim), count)


def count_nonzero(input: TensorLike, dim: Dim = None) -> Tensor:
    """The number of nonzero elements (over `dim`, one dim or several)."""
    x = as_tensor(input)
    return _sum(cast(ne(x, 0), dtypes.int64), dim)


@accepts_out
@dim_aliases
def aminmax(input: TensorLike, *, dim: int | None = None, keepdim: bool = False) -> MinMax:
    """(min, max) over `dim` (all elements when None)."""
    x = as_tensor(input)
    return MinMax(amin(x, dim, keepdim), amax(x, dim, keepdim))


def _sorted_along(x, dim):
    return sort(x, dim)


def _pick(values, dim, position, keepdim):
    key = [slice(None)] * values.ndim
    key[dim] = slice(position, position + 1)
    out = values[tuple(key)]
    return out if keepdim else out.squeeze(dim)


@accepts_out
@dim_aliases
def kthvalue(input: TensorLike, k: int, dim: int | None = None,
             keepdim: bool = False) -> ValuesIndices:
    """The k-th smallest value along `dim` (k from 1; the last dim when None) and its index."""
    x = as_tensor(input)
    dim = -1 if dim is None else dim
    if x.ndim == 0:
        x = reshape(x, (1,))
    d = _dim(x, dim)
    n = x.shape[d]
    if not 1 <= k <= n:
        raise ArgumentError(f"kthvalue: k={k} is out of range for a dim of size {n}")
    values, indices = sort(x, d, stable=True)
    return ValuesIndices(_pick(values, d, k - 1, keepdim), _pick(indices, d, k - 1, keepdim))


@overload
def median(input: TensorLike, dim: None = None, keepdim: bool = False) -> Tensor: ...
@overload
def median(input: TensorLike, dim: int, keepdim: bool = False) -> ValuesIndices: ...


@accepts_out
@dim_aliases
def median(input: TensorLike, dim: int | None = None,
           keepdim: bool = False) -> Tensor | ValuesIndices:
    """The lower median (of an even count, the smaller middle value): over all elements, or
    along `dim` with its index. NaN propagates."""
    x = as_tensor(input)
    if dim is None:
        flat = reshape(x, (-1,))
        values = sort(flat, 0).values
        n = flat.shape[0]
        return values[(n - 1) // 2] if not _has_nan(x) else values[n - 1]
    d = _dim(x, dim)
    n = x.shape[d]
    values, indices = sort(x, d, stable=True)
    position = (n - 1) // 2
    v, i = _pick(values, d, position, True), _pick(indices, d, position, True)
    last_v, last_i = _pick(values, d, n - 1, True), _pick(indices, d, n - 1, True)
    has_nan = isnan(last_v) if x.dtype.kind == "f" else ne(last_v, last_v)
    v, i = where(has_nan, last_v, v), where(has_nan, last_i, i)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    return ValuesIndices(v, i)


def _has_nan(x) -> bool:
    if x.dtype.kind != "f" or x._node is not None:
        return False
    return bool(np.isnan(x._value("median")).any())


@overload
def nanmedian(input: TensorLike, dim: None = None, keepdim: bool = False) -> Tensor: ...
@overload
def nanmedian(input: TensorLike, dim: int, keepdim: bool = False) -> ValuesIndices: ...


@accepts_out
@dim_aliases
def nanmedian(input: TensorLike, dim: int | None = None,
              keepdim: bool = False) -> Tensor | ValuesIndices:
    """The lower median of the non-NaN elements (NaN sorts last, so it is skipped)."""
    x = as_tensor(input)
    if dim is None:
        flat = reshape(x, (-1,))
        values = sort(flat, 0).values
        count = int((~np.isnan(x._value("nanmedian"))).sum()) if x.dtype.kind == "f" else \
            flat.shape[0]
        return values[max(count - 1, 0) // 2]
    d = _dim(x, dim)
    values, indices = sort(x, d, stable=True)
    valid = _sum(cast(logical_not(isnan(x)), dtypes.int64), d, True) if x.dtype.kind == "f" \
        else zeros_like(cast(_pick(values, d, 0, True), dtypes.int64)) + x.shape[d]
    position = clip(div_floor(valid - 1, 2), 0, None)
    v = values.gather(d, position)
    i = indices.gather(d, position)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    return ValuesIndices(v, i)


def div_floor(a, b: int):
    return floor_divide(a, b)


@accepts_out
@dim_aliases
def mode(input: TensorLike, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
    """The most frequent value along `dim` (the smallest of ties) and an index of it."""
    x = as_tensor(input)
    data = x._value("mode")
    d = _dim(x, dim) if x.ndim else 0
    moved = np.moveaxis(data.reshape(data.shape or (1,)), d, -1)
    lead = moved.shape[:-1]
    values = np.empty(lead, data.dtype)
    indices = np.empty(lead, np.int64)
    for pos in np.ndindex(*lead):
        row = moved[pos]
        uniq, counts = np.unique(row, return_counts=True)
        best = uniq[np.argmax(counts)]
        values[pos] = best
        indices[pos] = np.flatnonzero(row == best)[-1]
    values, indices = constant_like(values, x), constant_like(indices, x)
    if keepdim and x.ndim:
        values, indices = unsqueeze(values, d), unsqueeze(indices, d)
    if x.requires_grad:  # the gradient reaches the chosen element
        values = x.gather(d, indices if keepdim else unsqueeze(indices, d))
        values = values if keepdim else values.squeeze(d)
    return ValuesIndices(values, indices)


@accepts_out
@dim_aliases
def quantile(input: TensorLike, q: float | TensorLike, dim: int | None = None,
             keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The q-quantiles (q a number or a 1-d tensor in [0, 1]) along `dim` (all elements when
    None), with PyTorch's interpolation modes; a NaN in a slice gives NaN."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


@accepts_out
@dim_aliases
def nanquantile(input: TensorLike, q: float | TensorLike, dim: int | None = None,
                keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """`quantile` of the non-NaN elements."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    x = as_tensor(input)
    if x.dtype.kind != "f":
        raise DTypeError(f"{name}: expects a floating point tensor, got {x.dtype}")
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ArgumentError(f"{name}: unknown interpolation {interpolation!r}")
    q_values = np.asarray(q._value(name) if hasattr(q, "_value") else q, np.float64)
    scalar_q = q_values.ndim == 0
    qs = np.atleast_1d(q_values)
    # a tensor q is differentiable: the interpolation weight depends on it
    q_tensor = reshape(cast(q, x.dtype), (-1,)) if hasattr(q, "_value") else None
    if qs.ndim != 1 or ((qs < 0) | (qs > 1)).any():
        raise ArgumentError(f"{name}: q must be in [0, 1] (a number or a 1-d tensor)")
    original_ndim = x.ndim
    if dim is None:
        x, d = reshape(x, (-1,)), 0
    else:
        d = _dim(x, dim)
    values = sort(x, d).values  # NaN sorts last
    n = x.shape[d]
    if ignore_nan:
        count = _sum(cast(logical_not(isnan(x)), x.dtype), d, True)
    else:
        count = zeros_like(_pick(values, d, 0, True)) + float(n)
    outs = []
    for i, level in enumerate(qs):
        level = float(level) if q_tensor is None else q_tensor[i]
        rank = mul(clip(count - 1.0, 0.0, None), level)
        low, high = _floor(rank.detach()), _ceil(rank.detach())
        if interpolation == "lower":
            high = low
        elif interpolation == "higher":
            low = high
        elif interpolation == "nearest":
            low = high = _round_half_even(rank.detach())
        lo_v = values.gather(d, cast(low, dtypes.int64))
        hi_v = values.gather(d, cast(high, dtypes.int64))
        if interpolation == "midpoint":
            value = add(lo_v, hi_v) * 0.5
        else:
            weight = rank - low
            value = lo_v + (hi_v - lo_v) * weight
        if not ignore_nan:
            value = where(isnan(_pick(values, d, n - 1, True)), _pick(values, d, n - 1, True),
                          value)
        else:
            value = where(eq(count, 0.0), zeros_like(value) + float("nan"), value)
        outs.append(value)
    out = concat(outs, d) if len(outs) > 1 else outs[0]
    if dim is None:
        lead = () if scalar_q else (len(qs),)
        return reshape(out, lead + ((1,) * original_ndim if keepdim else ()))
    if scalar_q:
        return out if keepdim else out.squeeze(d)
    out = out.movedim(d, 0)  # PyTorch puts the q dim first
    return unsqueeze(out, d + 1) if keepdim else out


def _floor(x):
    return floor(x)


def _ceil(x):
    return ceil(x)


def _round_half_even(x):
    return round_(x)


@accepts_out
@dim_aliases
def logcumsumexp(input: TensorLike, dim: int) -> Tensor:
    """log(cumsum(exp(input))) along `dim`, computed stably."""
    x = as_tensor(input)
    d = _dim(x, dim)
    top = amax(x, d, True).detach()
    top = where(isinf(top), zeros_like(top), top)  # all -inf (or an inf) along the dim
    return add(log(cumsum(exp(sub(x, top)), d)), top)


def _cum_extreme(name, input, dim, better):
    """PyTorch's running extreme: a new element takes over when it is at least as good (so
    the last index of ties is reported) or is NaN (which then stays)."""
    x = as_tensor(input)
    d = _dim(x, dim)
    values, indices = [], []
    best_v = best_i = None
    for i in range(x.shape[d]):
        v = _pick(x, d, i, True)
        idx = zeros_like(cast(v, dtypes.int64)) + i
        if best_v is None:
            best_v, best_i = v, idx
        else:
            take = better(v, best_v)
            if x.dtype.kind == "f":
                take = logical_or(take, isnan(v))
            best_v, best_i = where(take, v, best_v), where(take, idx, best_i)
        values.append(best_v)
        indices.append(best_i)
    return ValuesIndices(concat(values, d), concat(indices, d))


@accepts_out
@dim_aliases
def cummax(input: TensorLike, dim: int) -> ValuesIndices:
    """The running maximum along `dim` and where it was reached (the last index of ties)."""
    return _cum_extreme("cummax", input, dim, ge)


@accepts_out
@dim_aliases
def cummin(input: TensorLike, dim: int) -> ValuesIndices:
    """The running minimum along `dim` and where it was reached (the last index of ties)."""
    return _cum_extreme("cummin", input, dim, le)


def _spacing(y, d, x, dx):
    if x is not None:
        xs = as_tensor(x)
        xd = d if xs.ndim == y.ndim else 0
        n = xs.shape[xd]
        key_hi = [slice(None)] * xs.ndim
        key_lo = [slice(None)] * xs.ndim
        key_hi[xd], key_lo[xd] = slice(1, n), slice(0, n - 1)
        step = xs[tuple(key_hi)] - xs[tuple(key_lo)]
        if xs.ndim == 1 and y.ndim > 1:
            shape = [1] * y.ndim
            shape[d] = n - 1
            step = reshape(step, tuple(shape))
        return step
    return 1.0 if dx is None else dx


def _pairs(y, d):
    n = y.shape[d]
    hi, lo = [slice(None)] * y.ndim, [slice(None)] * y.ndim
    hi[d], lo[d] = slice(1, n), slice(0, n - 1)
    return y[tuple(hi)], y[tuple(lo)]


def trapezoid(y: TensorLike, x: TensorLike | None = None, *, dx: float | None = None, dim: int = -1
              ) -> Tensor:
    """The trapezoidal rule along `dim` (spacing `x` samples, or `dx`, default 1)."""
    y = as_tensor(y)
    d = _dim(y, dim)
    hi, lo = _pairs(y, d)
    return _sum(mul(add(hi, lo), _spacing(y, d, x, dx)), d) * 0.5


def trapz(y: TensorLike, x: TensorLike | None = None, *, dx: float | None = None,
          dim: int = -1) -> Tensor:
    """An alias of `trapezoid`."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: TensorLike, x: TensorLike | None = None, *, dx: float | None = None,
                         dim: int = -1) -> Tensor:
    """The running trapezoidal integral along `dim` (one element shorter)."""
    y = as_tensor(y)
    d = _dim(y, dim)
    hi, lo = _pairs(y, d)
    return cumsum(mul(add(hi, lo), _spacing(y, d, x, dx)) * 0.5, d)


def dist(input: TensorLike, other: TensorLike, p: float = 2) -> Tensor:
    """The p-norm of input - other."""
    diff = sub(as_tensor(input), as_tensor(other))
    if p == float("inf"):
        return amax(_abs(diff))
    if p == float("-inf"):
        return amin(_abs(diff))
    if p == 0:
        return _sum(cast(ne(diff, 0.0), diff.dtype))
    if p == 2:
        return sqrt(_sum(mul(diff, diff)))
    return pow(_sum(pow(_abs(diff), float(p))), 1.0 / p)


@accepts_out
@dim_aliases
def renorm(input: TensorLike, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along `dim` rescaled so its p-norm is at most `maxnorm` (PyTorch's 1e-7
    guard in the scale)."""
    x = as_tensor(input)
    d = _dim(x, dim)
    others = tuple(i for i in range(x.ndim) if i != d)
    norms = pow(_sum(pow(_abs(x), float(p)), others, True), 1.0 / p)
    scale = where(gt(norms, maxnorm), div(maxnorm, add(norms, 1e-7)), zeros_like(norms) + 1.0)
    return mul(x, scale)


__all__ = ["nansum", "nanmean", "count_nonzero", "aminmax", "kthvalue", "median", "nanmedian",
           "mode", "quantile", "nanquantile", "logcumsumexp", "cummax", "cummin", "trapezoid",
           "trapz", "cumulative_trapezoid", "dist", "renorm"]
