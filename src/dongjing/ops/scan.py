"""Products, cumulative scans, boolean reductions, variance/std with `correction`, and norms.

prod, cumsum, cumprod, all, any and the 2-norm are primitives (one pass each); var, std and the
other norms are composed. The product rules stay exact when the input holds zeros.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import dtypes
from ..autocasting import autocast_policy
from ..backends import backend_of
from ..core import infer as inf
from ..core.registry import Kind, Spec, binds, define
from ..core.torch_args import dim_aliases, hide_variadic_keywords
from ..dispatch import apply1
from ..dtypes import is_floating
from ..errors import ArgumentError, DTypeError, ShapeError
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out
from ..tensor.transfer import placement_of
from . import onnx_rules
from .compare import eq, gt, logical_and, logical_or, ne
from .convert import as_tensor
from .elementwise import abs, cast, div, maximum, mul, ones_like, sqrt, sub, where, zeros_like
from .index import getitem
from .layout import flip, triu
from .math import isfinite
from .reduce import (
    _canon_dim,
    _reduce_infer,
    _restore,
    _sum_dtype,
    amax,
    amin,
    count,
    finish,
    mean,
    sum,
)
from .shape import cat, reshape, reshape_like, transpose, unsqueeze

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..core.registry import Op
    from ..types import DTypeLike

R = Kind.REDUCE


def _one_dim(name, x, dim):
    return None if dim is None else inf.normalize_dim(name, dim, x.ndim)


# --- prod ---------------------------------------------------------------------------------------
def _prod_forward(xp, x, dim=None, keepdim=False):
    return xp.prod(x, axis=dim, keepdims=keepdim, dtype=_sum_dtype(x.dtype))


def _prod_grad(g, x, *, out, dim=None, keepdim=False):
    # PyTorch's rule: g * out / x where x holds no zero; where it holds one, the product of the
    # other factors, exactly (running products from the left and from the right, in PyTorch's
    # order); over all dims with two zeros or more, 0. A 0-d x passes g on.
    if x.ndim == 0:
        return g
    g = _restore(g, x, dim, keepdim)
    quotient = mul(g, div(_restore(out, x, dim, keepdim), x))
    if x._node is None and not bool((x._data == 0).any()):
        return quotient
    if dim is None:
        flat = reshape(x, (-1,))
        exact = mul(g, reshape_like(mul(*_exclusive_products(flat, 0)), x))
        exact = where(gt(sum(cast(eq(x, 0.0), x.dtype)), 1.0), 0.0, exact)
    else:
        exact = mul(g, mul(*_exclusive_products(x, dim)))
    if x._node is None:
        return exact
    return where(any(eq(x, 0.0)), exact, quotient)


def _exclusive_products(x, dim):
    """The products of the factors before and after each one along `dim` (1 where none)."""
    one = ones_like(sum(x, dim, keepdim=True))
    drop_last = (slice(None),) * dim + (slice(None, -1),)
    before = getitem(cat([one, cumprod(x, dim)], dim), drop_last)
    after = getitem(cat([one, cumprod(flip(x, dim), dim)], dim), drop_last)
    return before, flip(after, dim)


_prod = define("prod", forward=_prod_forward, infer=_reduce_infer("prod", _sum_dtype),
               grads=(_prod_grad,), kind=R, onnx=onnx_rules.reduce_rule("ReduceProd"),
               public="prod", methods="prod")


@binds(_prod)
@autocast_policy("prod")
@dim_aliases
def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
         dtype: DTypeLike | None = None) -> Tensor:
    """Product of all elements, or over one dim (integers and bools give int64)."""
    x = as_tensor(input)
    if dtype is not None:
        x = cast(x, dtype)
    return apply1(_prod, x, dim=_one_dim("prod", x, dim), keepdim=keepdim)


# --- cumulative sum and product -------------------------------------------------------------
def _scan_infer(name):
    def infer(x: Spec, dim, reverse=False):
        return x.shape, _sum_dtype(x.dtype)

    return infer


def _flipped(xp, fn, x, dim, reverse):
    if x.ndim == 0:  # NumPy's scan of a 0-d array is 1-d; PyTorch's (and infer's) stays 0-d
        return fn(x.reshape(1), axis=0, dtype=_sum_dtype(x.dtype)).reshape(())
    if not reverse:
        return fn(x, axis=dim, dtype=_sum_dtype(x.dtype))
    out = fn(xp.flip(x, dim), axis=dim, dtype=_sum_dtype(x.dtype))
    return xp.flip(out, dim).copy()


_cumsum = define(
    "cumsum", forward=lambda xp, x, dim, reverse=False: _flipped(xp, xp.cumsum, x, dim, reverse),
    infer=_scan_infer("cumsum"), kind=Kind.OPAQUE,
    grads=(lambda g, x, dim, reverse=False: apply1(_cumsum, g, dim=dim, reverse=not reverse),),
    onnx=onnx_rules.cumsum, public="cumsum", methods="cumsum",
    doc="Running sums along `dim` (`reverse=True` sums from the end).")


def running_sum(x, dim: int, reverse: bool = False) -> Tensor:
    """Running sums along `dim`, from the end when `reverse` (TF's and ONNX's cumsum)."""
    x = as_tensor(x)
    return apply1(_cumsum, x, dim=inf.normalize_dim("cumsum", dim, x.ndim), reverse=reverse)


@binds(_cumsum)
@autocast_policy("cumsum")
@dim_aliases
def cumsum(input: Tensor, dim: int, *, dtype=None, out: Tensor | None = None) -> Tensor:
    """Running sums along `dim`; integers and bools give int64 (as PyTorch)."""
    x = as_tensor(input)
    if dtype is not None:
        x = cast(x, dtype)
    return finish("cumsum", running_sum(x, dim), out)


def _cumprod_grad(g, x, *, out, dim):
    if not _maybe_zero(x):  # sum_{j>=i} g_j out_j / x_i
        return div(running_sum(mul(g, out), dim, reverse=True), x)
    # with zeros (or inf, NaN): d out_j / d x_i = prod_{k<=j, k!=i} x_k, an (n, n) table per slice
    # (row i: x with x_i replaced by 1, cumulative product over k), exact to any order

    n = x.shape[dim]
    xl, gl = transpose(x, dim, -1), transpose(g, dim, -1)
    ones = cast(ones_square(n, like=x), x.dtype) if n is not None else _ones_square_like(xl)
    table = mul(unsqueeze(xl, -2), ones)  # [..., i, k] = x_k
    eye = eq(sub(cumsum(ones, -1), cumsum(ones, -2)), 0.0)  # i == k
    partial = cumprod(where(eye, 1.0, table), -1)  # [..., i, j] = prod_{k<=j, k!=i} x_k
    upper = ne(triu(ones), 0.0)  # j >= i
    # PyTorch's value: a term whose product holds a zero x_k (k != i) is exactly 0 whatever
    # g_j is, so an inf or NaN g_j there does not reach x_i (before the first zero z, j < z
    # count; at z, j before the second zero; after z, none). A finite g_j's term stays (0,
    # but its own gradient in x_k is not: second order)
    is_zero = cast(eq(xl, 0.0), xl.dtype)
    other_zeros = sub(unsqueeze(cumsum(is_zero, -1), -2), unsqueeze(is_zero, -1))
    terms = logical_and(upper, logical_or(eq(other_zeros, 0.0),
                                          unsqueeze(isfinite(gl), -2)))
    # where, not a product with the mask: partial may be inf or NaN where j < i
    grad = sum(where(terms, mul(unsqueeze(gl, -2), partial), 0.0), -1)
    return transpose(grad, dim, -1)


def ones_square(n: int, like):
    """An (n, n) float64 tensor of ones on the backend and device of eager tensor `like` (on
    the host when `like` is symbolic: a constant of the graph)."""
    return Tensor._make(placement_of(like).call("ones", (n, n), dtype=dtypes.float64))


def _ones_square_like(xl):
    """An (n, n) tensor of ones, n the run-time size of `xl`'s last dim."""
    line = zeros_like(xl)
    if len(xl.shape) > 1:
        line = sum(line, tuple(range(len(xl.shape) - 1)))
    line = line + 1.0
    return mul(unsqueeze(line, -1), unsqueeze(line, 0))


def _maybe_zero(x) -> bool:
    """False only for an eager tensor known to hold no zero, inf or NaN (the rule may then take
    the short path, which divides by x: exact only for finite nonzero values)."""
    if x._node is not None:
        return True

    data = x._data
    return bool((data == 0).any()) or not bool(backend_of(data).xp.isfinite(data).all())


_cumprod = define("cumprod", forward=lambda xp, x, dim: _flipped(xp, xp.cumprod, x, dim, False),
                  infer=lambda x, dim: (x.shape, _sum_dtype(x.dtype)), grads=(_cumprod_grad,),
                  onnx=None, onnx_reason="ONNX has no cumulative product", public="cumprod",
                  methods="cumprod", doc="Running products along `dim`.")


@binds(_cumprod)
@autocast_policy("cumprod")
@dim_aliases
def cumprod(input: Tensor, dim: int, *, dtype=None, out: Tensor | None = None) -> Tensor:
    """Running products along `dim`; integers and bools give int64 (as PyTorch)."""
    x = as_tensor(input)
    if dtype is not None:
        x = cast(x, dtype)
    return finish("cumprod", apply1(_cumprod, x, dim=inf.normalize_dim("cumprod", dim, x.ndim)),
                  out)


# --- all / any ----------------------------------------------------------------------------------
def _bool_reduce(name: str) -> tuple[Op, Callable[..., Tensor]]:
    def forward(xp, x, dim=None, keepdim=False):
        return getattr(xp, name)(x, axis=dim, keepdims=keepdim)

    op = define(name, forward=forward, infer=_reduce_infer(name, lambda _: dtypes.bool_), kind=R,
                onnx=None, onnx_reason="exported as a ReduceMin/Max of a cast, not yet written",
                public=name, methods=name)

    def fn(input: Tensor, dim=None, keepdim: bool = False, *,
           out: Tensor | None = None) -> Tensor:
        x = as_tensor(input)
        return finish(name, apply1(op, x, dim=_canon_dim(x, dim), keepdim=keepdim), out)

    fn.__doc__ = f"Whether {name} elements are true (nonzero), over all or over `dim`."
    fn.__name__ = fn.__qualname__ = name
    return op, binds(op)(dim_aliases(fn))


_all, all = _bool_reduce("all")
_any, any = _bool_reduce("any")


# --- variance, std ------------------------------------------------------------------------------
def variance_arguments(name: str, dim, correction, kwargs: dict) -> tuple:
    """(dim, correction) from PyTorch's forms: `(dim, correction=1)`, the older `unbiased=`
    keyword, and a bool in either position (`x.var(False)`, `x.var(0, False)`: unbiased)."""
    unknown = set(kwargs) - {"unbiased"}
    if unknown:
        raise ArgumentError(f"{name}() got an unexpected keyword argument {sorted(unknown)[0]!r}")
    unbiased = kwargs.get("unbiased")
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if isinstance(correction, bool):
        correction, unbiased = 1, correction
    if unbiased is None:
        return dim, float(1 if correction is None else correction)
    if correction not in (None, 1):
        raise ArgumentError(f"{name}(): give unbiased= or correction=, not both")
    return dim, 1.0 if unbiased else 0.0


@dim_aliases
def var(input: Tensor, dim=None, correction: float = 1, keepdim: bool = False, *,
        out: Tensor | None = None, **unbiased) -> Tensor:
    """Variance over all elements or `dim`: sum((x - mean)^2) / (N - correction).

    `correction` defaults to 1 (Bessel); the older `unbiased=False` means correction 0, as in
    PyTorch, and so does a bool in the place of `dim` or `correction` (``x.var(False)``).
    """
    dim, c = variance_arguments("var", dim, correction, unbiased)
    return finish("var", _variance(input, dim, c, keepdim), out)


def _variance(x, dim, c, keepdim):
    x = as_tensor(x)
    if not is_floating(x.dtype):
        raise DTypeError(f"var: expects a floating point tensor, got {x.dtype}")
    centered = sub(x, mean(x, dim, keepdim=True))
    total = sum(mul(centered, centered), dim, keepdim)
    n = count(x, dim, x.dtype)
    # PyTorch's divisor max(N - correction, 0): too few elements give NaN (0/0), never -0
    return div(total, maximum(sub(n, c), 0.0) if c else n)


@dim_aliases
def std(input: Tensor, dim=None, correction: float = 1, keepdim: bool = False, *,
        out: Tensor | None = None, **unbiased) -> Tensor:
    """Standard deviation: the square root of `var` (same arguments)."""
    dim, c = variance_arguments("std", dim, correction, unbiased)
    return finish("std", sqrt(_variance(input, dim, c, keepdim)), out)


hide_variadic_keywords(var)  # `unbiased=` is accepted, as PyTorch accepts it, not listed
hide_variadic_keywords(std)


# --- norms --------------------------------------------------------------------------------------
def _norm2_forward(xp, x, dim=None, keepdim=False):
    return xp.sqrt(xp.sum(x * x, axis=dim, keepdims=keepdim))


def _norm2_grad(g, x, *, out, dim=None, keepdim=False):
    full = _restore(out, x, dim, keepdim)
    # at a zero norm the subgradient 0 is used, as PyTorch does
    return mul(_restore(g, x, dim, keepdim), div(x, where(eq(full, 0.0), 1.0, full)))


def _norm2_infer(x: Spec, dim=None, keepdim=False):
    if not is_floating(x.dtype):
        raise DTypeError(f"norm: expects a floating point tensor, got {x.dtype}")
    return _reduce_infer("norm")(x, dim, keepdim)


_norm2 = define("norm2", forward=_norm2_forward, infer=_norm2_infer, grads=(_norm2_grad,),
                kind=R, grad_name="NormBackward1",
                onnx=onnx_rules.reduce_rule("ReduceL2"),
                doc="The Euclidean (2-) norm over all elements or `dim`.")


@autocast_policy("norm")
@accepts_out(after="keepdim")
@dim_aliases
def norm(input: Tensor, p: float | str | None = "fro", dim=None, keepdim: bool = False,
         dtype=None) -> Tensor:
    """Vector norm over all elements or `dim`: p = 2 / "fro" (default), 1, inf, -inf, 0 or any
    positive number. Matrix norms other than Frobenius ("nuc", 2 over two dims) are refused."""
    x = as_tensor(input)
    if dtype is not None:
        x = cast(x, dtype)
    if not is_floating(x.dtype):
        raise DTypeError(f"norm: expects a floating point tensor, got {x.dtype}")
    dim = _canon_dim(x, dim)
    if p == "fro" or p == 2 or p is None:
        return apply1(_norm2, x, dim=dim, keepdim=keepdim)
    if isinstance(p, str):
        raise ShapeError(f"norm: p={p!r} is not supported (use 'fro', or a number)")
    if p == 1:
        return sum(abs(x), dim, keepdim)
    if p == float("inf"):
        return amax(abs(x), dim, keepdim)
    if p == float("-inf"):
        return amin(abs(x), dim, keepdim)
    if p == 0:
        return sum(cast(ne(x, 0.0), x.dtype), dim, keepdim)
    if p < 0:
        raise ShapeError(f"norm: p={p} is not supported (use a positive p, inf or -inf)")

    return pow(sum(pow(abs(x), float(p)), dim, keepdim), 1.0 / float(p))
