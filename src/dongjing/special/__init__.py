"""`dj.special` (PyTorch's `torch.special`): the functions that compose accurately from the op
table's primitives, so they differentiate, trace and build graph nodes. The gamma and Bessel
families (`gammaln`, `digamma`, `i0`, ...) are not provided: NumPy has no accurate kernels for
them and dongjing does not depend on SciPy."""

from __future__ import annotations

import math

from .. import dtypes, ops
from ..core.torch_args import dim_aliases, unlisted_keywords
from ..ops.convert import as_tensor, pair
from ..tensor.out_argument import accepts_out

__all__ = ["expit", "exp2", "expm1", "log1p", "logit", "logsumexp", "log_softmax", "softmax",
           "round", "sinc", "xlogy", "xlog1py", "erf", "ndtr", "entr"]


def _floating(x):
    x = as_tensor(x)
    return x if x.dtype.kind == "f" else ops.cast(x, dtypes.default_float)


@accepts_out
def expit(input):
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    return ops.sigmoid(_floating(input))


@accepts_out
def exp2(input):
    """2 ** x."""
    return ops.exp2(input)


@accepts_out
def expm1(input):
    """exp(x) - 1, accurate for small x."""
    return ops.expm1(_floating(input))


@accepts_out
def log1p(input):
    """log(1 + x), accurate for small x."""
    return ops.log1p(_floating(input))


@accepts_out
def logit(input, eps=None):
    """log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given."""
    return ops.logit(input, eps)


@accepts_out
@dim_aliases
def logsumexp(input, dim, keepdim: bool = False):
    """log(sum(exp(x))) over `dim`, computed stably."""
    return ops.logsumexp(_floating(input), dim, keepdim)


def log_softmax(input, dim, *, dtype=None):
    """log(softmax(x)) along `dim` (computed in `dtype` when given)."""
    x = _floating(input) if dtype is None else ops.cast(as_tensor(input), dtype)
    return ops.log_softmax(x, dim)


def softmax(input, dim, *, dtype=None):
    """exp(x) / sum(exp(x)) along `dim` (computed in `dtype` when given)."""
    x = _floating(input) if dtype is None else ops.cast(as_tensor(input), dtype)
    return ops.softmax(x, dim)


def round(input, *, decimals: int = 0):
    """Round half to even (to `decimals` places)."""
    return ops.round(as_tensor(input), decimals=decimals)


# PyTorch documents `special.round(input, *, out=None)` and accepts `decimals=` besides
round = unlisted_keywords(accepts_out(round), "decimals")


@accepts_out
def sinc(input):
    """sin(pi x) / (pi x), 1 at 0."""
    return ops.sinc(input)


@accepts_out
def xlogy(input, other):
    """x * log(y), 0 where x is 0 (unless y is NaN)."""
    return ops.xlogy(input, other)


@accepts_out
def xlog1py(input, other):
    """x * log1p(y), 0 where x is 0 (unless y is NaN)."""
    x, y = pair(input, other)
    x, y = _floating(x), _floating(y)
    zero = ops.logical_and(ops.eq(x, 0.0), ops.logical_not(ops.isnan(y)))
    # where x is 0 and log1p(y) is not finite, log1p(0) keeps 0 * log1p(y) from being NaN
    unsafe = ops.logical_and(zero, ops.logical_or(ops.le(y, -1.0), ops.eq(y, float("inf"))))
    return ops.mul(x, ops.log1p(ops.where(unsafe, ops.zeros_like(y), y)))


@accepts_out
def erf(input):
    """The error function (dongjing's erf: absolute error below 1.5e-7)."""
    return ops.erf(_floating(input))


@accepts_out
def ndtr(input):
    """The standard normal CDF, 0.5 * (1 + erf(x / sqrt(2))) (to the precision of its dtype)."""
    return (ops.erf(_floating(input) * (1.0 / math.sqrt(2.0))) + 1.0) * 0.5


@accepts_out
def entr(input):
    """-x * log(x) elementwise: 0 at 0, -inf for negative x (where the gradient is 0; PyTorch's
    formula gives inf and NaN there)."""
    x = _floating(input)
    positive = ops.gt(x, 0.0)
    safe = ops.where(positive, x, ops.ones_like(x))
    value = ops.neg(ops.mul(x, ops.log(safe)))
    value = ops.where(ops.eq(x, 0.0), ops.zeros_like(x), value)
    return ops.where(ops.lt(x, 0.0), ops.full_like(x, float("-inf")), value)
