"""The softmax family: log_softmax is a primitive (one stable pass, a short gradient);
logsumexp and softmax are composed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core import infer as inf
from ..core.registry import Kind, Onnx, Spec, binds, define
from ..core.torch_args import dim_aliases
from ..dispatch import apply1
from ..dtypes import is_floating
from ..errors import DTypeError
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out
from .convert import as_tensor
from .elementwise import cast, exp, log, mul, stop_gradient, sub, where, zeros_like
from .math import isinf
from .reduce import amax, sum
from .shape import concat, reshape, squeeze

if TYPE_CHECKING:
    from ..tensor import Tensor


def _log_softmax_out(xp, x, dim, out):
    # reliab: initial=-inf lets an empty dim give an empty result (as PyTorch); the ufuncs'
    # reduce methods are what xp.max / xp.sum call, without NumPy's Python-level wrappers
    try:
        top = xp.maximum.reduce(x, axis=dim, keepdims=True, initial=float("-inf"))
    except (AttributeError, TypeError):  # ufuncs as plain functions, or a narrower reduce
        try:
            top = xp.max(x, axis=dim, keepdims=True, initial=float("-inf"))
        except TypeError:  # no initial= (CuPy): an empty dim raises there
            top = xp.max(x, axis=dim, keepdims=True)
    xp.subtract(x, top, out=out)
    e = xp.exp(out)
    try:
        total = xp.add.reduce(e, axis=dim, keepdims=True)
    except (AttributeError, TypeError):
        total = xp.sum(e, axis=dim, keepdims=True)
    out -= xp.log(total)
    return out


def _log_softmax_forward(xp, x, dim):
    return _log_softmax_out(xp, x, dim, xp.empty_like(x))


def _log_softmax_infer(x: Spec, dim):
    if not is_floating(x.dtype):
        raise DTypeError(f"log_softmax: expects a floating point tensor, got {x.dtype}")
    return x.shape, x.dtype


def _log_softmax_grad(g, x, *, out, dim):
    # d/dx of x - logsumexp(x): g - softmax(x) * sum(g)
    return sub(g, mul(exp(out), sum(g, dim, keepdim=True)))


_log_softmax = define("log_softmax", forward=_log_softmax_forward, infer=_log_softmax_infer,
                      grads=(_log_softmax_grad,), kind=Kind.REDUCE,
                      forward_out=_log_softmax_out, onnx=Onnx("LogSoftmax", {"axis": "dim"}),
                      public="log_softmax", methods="log_softmax")


@binds(_log_softmax)
@dim_aliases
def log_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """x - logsumexp(x) along `dim`, computed stably in one op (`dtype`: the input cast first)."""
    x = as_tensor(input)
    if dtype is not None:
        x = cast(x, dtype)
    dim = inf.normalize_dim("log_softmax", dim, x.ndim)
    if x.ndim == 0:  # one element along its only (implicit) dim, as PyTorch
        return reshape(apply1(_log_softmax, reshape(x, (1,)), dim=0), ())
    return apply1(_log_softmax, x, dim=dim)


@accepts_out
@dim_aliases
def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x), dim)), stable: the max is subtracted first (and added back)."""
    x = as_tensor(input)
    dim = inf.normalize_dims("logsumexp", dim, x.ndim)
    if x.ndim == 0:  # dim 0 (or -1) of a 0-d tensor: the same reduction of its one element
        return reshape(logsumexp(reshape(x, (1,)), 0), ())
    if any(x.shape[d] == 0 for d in dim):  # reliab: an empty sum is 0, log 0 = -inf (PyTorch)
        return log(sum(exp(x), dim, keepdim=keepdim))
    top = amax(_pad_unknown(x, dim), dim, keepdim=True)
    # a row whose max is +-inf is not shifted (inf - inf is NaN): its sum of exps is then inf
    # or 0 and its logsumexp +inf or -inf, as PyTorch's
    shift = stop_gradient(where(isinf(top), 0.0, top))
    out = log(sum(exp(sub(x, shift)), dim, keepdim=True)) + shift
    return out if keepdim else squeeze(out, dim)


@dim_aliases
def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`, stable (`dtype`: the input cast first)."""
    return exp(log_softmax(input, dim, dtype))


def _pad_unknown(x, dims):
    """`x` with one -inf appended along each dim of `dims` whose size is unknown (it may be fed
    empty; amax of an empty dim fails, and with the -inf, logsumexp gives -inf, as PyTorch)."""
    for d in dims:
        if x.shape[d] is None:
            x = concat([x, sum(zeros_like(x), d, keepdim=True) + float("-inf")], d)
    return x
