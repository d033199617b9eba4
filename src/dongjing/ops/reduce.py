"""Reductions: sum, amax/amin, argmax/argmin, and shape-derived counts; mean is composed."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, overload

from .. import dtypes
from ..core import infer as inf
from ..core.registry import Kind, Spec, binds, define
from ..core.torch_args import dim_aliases, unlisted_keywords
from ..dispatch import apply1
from ..dtypes import is_floating
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from ..tensor.out_argument import write_out
from . import onnx_rules
from . import shape as _shape
from .convert import as_tensor
from .elementwise import cast, div, eq, maximum, minimum, mul

if TYPE_CHECKING:
    from ..types import Dim, DTypeLike

R = Kind.REDUCE


def _reduced_shape(shape, axes, keepdim):
    if keepdim:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduce_infer(name, out_dtype=None, needs_elements=False):
    def infer(x: Spec, dim=None, keepdim=False):
        axes = inf.normalize_dims(name, dim, len(x.shape))
        if needs_elements:
            check_reducible(name, x.shape, axes)
        dtype = out_dtype(x.dtype) if out_dtype else x.dtype
        return _reduced_shape(x.shape, axes, keepdim), dtype

    return infer


def check_reducible(name, shape, axes) -> None:
    """Raise a ShapeError when a reduction without an identity (max, min, their args) would
    reduce a dim of known size 0; over other dims an empty tensor reduces to an empty result,
    as in PyTorch. `axes` None means every dim."""
    reduced = range(len(shape)) if axes is None else axes
    if any(shape[a] == 0 for a in reduced):
        raise ShapeError(f"{name}: cannot reduce an empty tensor of shape {tuple(shape)} over "
                         f"a dim of size 0 (dim {axes}): the operation has no identity")


def _sum_dtype(dtype):
    return dtype if is_floating(dtype) else dtypes.int64


def _sum_forward(xp, x, dim=None, keepdim=False):
    return _sum_forward_out(xp, x, None, dim, keepdim)


def _restore(g, x, dim, keepdim):
    """`g` (a reduction's gradient) broadcast back over the reduced dims of `x`."""
    if not keepdim and g.ndim:  # a 0-d g broadcasts as it is
        for axis in inf.normalize_dims("sum", dim, x.ndim):
            g = _shape.unsqueeze(g, axis)
    return _shape.broadcast_to_like(g, x)


def _sum_forward_out(xp, x, out, dim=None, keepdim=False):
    # add.reduce is what xp.sum calls, without NumPy's Python-level argument handling (~0.5 µs)
    dtype = _sum_dtype(x.dtype)
    try:
        return xp.add.reduce(x, dim, dtype, out, keepdim)
    except (AttributeError, TypeError):  # ufuncs as plain functions, or a narrower reduce
        return xp.sum(x, axis=dim, keepdims=keepdim, dtype=dtype, out=out)


_sum = define("sum", forward=_sum_forward, infer=_reduce_infer("sum", _sum_dtype),
              grads=(lambda g, x, dim=None, keepdim=False: _restore(g, x, dim, keepdim),),
              kind=R, forward_out=_sum_forward_out, onnx=onnx_rules.reduce_sum, public="sum",
              methods="sum")


def _canon_dim(x, dim):
    if dim is None:
        return None
    axes = inf.normalize_dims("reduce", dim, x.ndim)
    return axes


def finish(name: str, result: Tensor, out) -> Tensor:
    """`result`, or written into the caller's `out=` tensor."""
    return result if out is None else write_out(name, result, out)


@binds(_sum)
@dim_aliases
def sum(input: Tensor, dim: Dim = None, keepdim: bool = False, *, dtype: DTypeLike | None = None,
        out: Tensor | None = None) -> Tensor:
    """Sum over all elements, or over `dim` (an int or a tuple of ints); `dtype` casts first."""
    x = as_tensor(input)
    if dtype is not None:
        x = cast(x, dtype)
    return finish("sum", apply1(_sum, x, dim=_canon_dim(x, dim), keepdim=keepdim), out)


unlisted_keywords(sum, "out")  # accepted, as PyTorch's sum accepts it without documenting it


def _extreme_grad(g, x, *, out, dim=None, keepdim=False):
    hit = cast(eq(x, _restore(out, x, dim, keepdim)), g.dtype)
    count = sum(hit, dim=dim, keepdim=True)
    # ties share the gradient evenly, as PyTorch's amax/amin do
    return mul(_restore(g, x, dim, keepdim), div(hit, _restore(count, x, dim, True)))


def _nonempty(name, reduce):
    """`reduce`'s forward, raising a ShapeError naming `name` for an empty reduced dim (known
    only when a graph runs, where that dim was unknown) instead of NumPy's raw ValueError."""
    def forward(xp, x, dim=None, keepdim=False):
        try:
            return reduce(xp, x, dim, keepdim)
        except ValueError:
            if x.size:
                raise
            check_reducible(name, x.shape, (dim,) if isinstance(dim, int) else dim)
            raise
    return forward


_amax = define("amax", forward=_nonempty("amax", lambda xp, x, dim, keepdim: xp.max(
                   x, axis=dim, keepdims=keepdim)),
               infer=_reduce_infer("amax", needs_elements=True), grads=(_extreme_grad,), kind=R,
               onnx=onnx_rules.extreme("ReduceMax"), public="amax", methods="amax")
_amin = define("amin", forward=_nonempty("amin", lambda xp, x, dim, keepdim: xp.min(
                   x, axis=dim, keepdims=keepdim)),
               infer=_reduce_infer("amin", needs_elements=True), grads=(_extreme_grad,), kind=R,
               onnx=onnx_rules.extreme("ReduceMin"), public="amin", methods="amin")


def _empty_check(name, x, dim):
    if x._node is None and x._data.size == 0:
        check_reducible(name, x._data.shape, dim)


@binds(_amax)
@dim_aliases
def amax(input: Tensor, dim: Dim = None, keepdim: bool = False, *,
         out: Tensor | None = None) -> Tensor:
    """Largest value over all elements or over `dim`."""
    x = as_tensor(input)
    dim = _canon_dim(x, dim)
    _empty_check("amax", x, dim)
    return finish("amax", apply1(_amax, x, dim=dim, keepdim=keepdim), out)


@binds(_amin)
@dim_aliases
def amin(input: Tensor, dim: Dim = None, keepdim: bool = False, *,
         out: Tensor | None = None) -> Tensor:
    """Smallest value over all elements or over `dim`."""
    x = as_tensor(input)
    dim = _canon_dim(x, dim)
    _empty_check("amin", x, dim)
    return finish("amin", apply1(_amin, x, dim=dim, keepdim=keepdim), out)


def _arg_infer(name):
    def infer(x: Spec, dim=None, keepdim=False):
        if dim is None:
            check_reducible(name, x.shape, None)
            return ((1,) * len(x.shape) if keepdim else ()), dtypes.int64
        return _reduce_infer(name, needs_elements=True)(x, dim, keepdim)[0], dtypes.int64

    return infer


_argmax = define("argmax", forward=_nonempty("argmax", lambda xp, x, dim, keepdim: xp.argmax(
                     x, axis=dim, keepdims=keepdim)),
                 infer=_arg_infer("argmax"), kind=R, onnx=onnx_rules.arg("ArgMax"), public="argmax",
                 methods="argmax")
_argmin = define("argmin", forward=_nonempty("argmin", lambda xp, x, dim, keepdim: xp.argmin(
                     x, axis=dim, keepdims=keepdim)),
                 infer=_arg_infer("argmin"), kind=R, onnx=onnx_rules.arg("ArgMin"), public="argmin",
                 methods="argmin")


@binds(_argmax)
@dim_aliases
def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the largest value (of the flattened tensor when `dim` is None)."""
    x = as_tensor(input)
    if dim is not None:
        dim = inf.normalize_dim("argmax", dim, x.ndim)
    return apply1(_argmax, x, dim=dim, keepdim=keepdim)


@binds(_argmin)
@dim_aliases
def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest value (of the flattened tensor when `dim` is None)."""
    x = as_tensor(input)
    if dim is not None:
        dim = inf.normalize_dim("argmin", dim, x.ndim)
    return apply1(_argmin, x, dim=dim, keepdim=keepdim)


class ValuesIndices(NamedTuple):
    """(values, indices) of `max`/`min` over a dim."""

    values: Tensor
    indices: Tensor


def _extreme(name: str, pair, whole, arg, input, dim, keepdim, out):
    if isinstance(dim, Tensor):  # max(input, other): maximum
        return finish(name, pair(input, dim), out)
    if dim is None:
        return finish(name, whole(input), out)
    return finish(name, ValuesIndices(whole(input, dim, keepdim), arg(input, dim, keepdim)), out)


@overload
def max(input: Tensor, dim: None = None, keepdim: bool = False, *,
        out: Tensor | None = None) -> Tensor: ...
@overload
def max(input: Tensor, dim: Tensor, keepdim: bool = False, *,
        out: Tensor | None = None) -> Tensor: ...
@overload
def max(input: Tensor, dim: int, keepdim: bool = False, *,
        out: tuple[Tensor, Tensor] | None = None) -> ValuesIndices: ...


@dim_aliases
def max(input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False, *,
        out: Tensor | tuple[Tensor, Tensor] | None = None) -> Tensor | ValuesIndices:
    """`max(input)`: the largest element; `max(input, dim)`: (values, indices);
    `max(input, other)`: the elementwise maximum."""
    return _extreme("max", maximum, amax, argmax, input, dim, keepdim, out)


@overload
def min(input: Tensor, dim: None = None, keepdim: bool = False, *,
        out: Tensor | None = None) -> Tensor: ...
@overload
def min(input: Tensor, dim: Tensor, keepdim: bool = False, *,
        out: Tensor | None = None) -> Tensor: ...
@overload
def min(input: Tensor, dim: int, keepdim: bool = False, *,
        out: tuple[Tensor, Tensor] | None = None) -> ValuesIndices: ...


@dim_aliases
def min(input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False, *,
        out: Tensor | tuple[Tensor, Tensor] | None = None) -> Tensor | ValuesIndices:
    """Like `max`, for the smallest."""
    return _extreme("min", minimum, amin, argmin, input, dim, keepdim, out)


def _count_forward(xp, x, dim=None, dtype=None):
    axes = range(x.ndim) if dim is None else dim
    n = 1
    for a in axes:
        n *= x.shape[a]
    return xp.asarray(n, dtype=dtype)


def _count_infer(x: Spec, dim=None, dtype=None):
    return (), dtype


_count = define("count", forward=_count_forward, infer=_count_infer, kind=Kind.SHAPE,
                public="count",
                onnx=onnx_rules.count)


@binds(_count)
def count(x, dim=None, dtype=dtypes.float32):
    """Number of elements of `x` over `dim`, as a 0-d tensor (folds away once shapes are known)."""
    x = as_tensor(x)
    return apply1(_count, x, dim=_canon_dim(x, dim), dtype=dtypes.as_dtype(dtype))


@dim_aliases
def mean(input: Tensor, dim: Dim = None, keepdim: bool = False, *, dtype: DTypeLike | None = None,
         out: Tensor | None = None) -> Tensor:
    """Arithmetic mean over all elements or over `dim` (composed: sum / count); `dtype` casts
    first."""
    x = as_tensor(input)
    if dtype is not None:
        x = cast(x, dtype)
    if not is_floating(x.dtype):
        raise DTypeError(f"mean: expects a floating point tensor, got {x.dtype}")
    return finish("mean", div(sum(x, dim, keepdim), count(x, dim, x.dtype)), out)
