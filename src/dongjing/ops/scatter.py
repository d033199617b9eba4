"""Gather and scatter along a dim (PyTorch's `gather`, `scatter`, `scatter_add`), and the
selections composed from other ops (`index_select`, `masked_fill`).

gather's gradient is a scatter_add and scatter_add's is a gather, so both differentiate to any
order. Indices are checked: an index out of range raises instead of wrapping around.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import dtypes
from ..core import infer as inf
from ..core.registry import Spec, binds, define
from ..dispatch import apply
from ..errors import ArgumentError, DTypeError, IndexOutOfRangeError, ShapeError
from ..short_paths import declare as _declare_short_path
from ..short_paths import state as _short
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out
from . import onnx_rules
from .convert import as_tensor, pair
from .elementwise import cast, full_like, where, zeros_like
from .index import getitem, getitem_grad

if TYPE_CHECKING:
    from ..types import Number, TensorLike


def _check_index(name, x: Spec, index: Spec, dim, src: Spec | None = None):
    if index.dtype.kind not in "iu":
        raise DTypeError(f"{name}: index must be an integer tensor, got {index.dtype}")
    if len(index.shape) != len(x.shape):
        raise ShapeError(f"{name}: index has {len(index.shape)} dims but the input has "
                         f"{len(x.shape)} (shapes {inf.fmt(index.shape)} and {inf.fmt(x.shape)})")
    for d, (i, s) in enumerate(zip(index.shape, x.shape)):
        if d != dim and i is not None and s is not None and i > s:
            raise ShapeError(f"{name}: index shape {inf.fmt(index.shape)} is larger than the "
                             f"input shape {inf.fmt(x.shape)} in dim {d}")
    if src is not None:
        if len(src.shape) != len(index.shape) or any(
                i is not None and s is not None and i > s for i, s in zip(index.shape, src.shape)):
            raise ShapeError(f"{name}: src shape {inf.fmt(src.shape)} must be at least the index "
                             f"shape {inf.fmt(index.shape)} in every dim")


def _positions(xp, name, index, size, dim):
    """The full index tuple addressing `x[..., index, ...]` elementwise along `dim`."""
    if index.size and (index.min() < 0 or index.max() >= size):  # PyTorch refuses -1 too
        raise ShapeError(f"{name}: index out of range for dim {dim} of size {size} "
                         f"(indices span {int(index.min())}..{int(index.max())})")
    ndim = len(index.shape)
    grids = [xp.arange(n).reshape((1,) * d + (n,) + (1,) * (ndim - d - 1))  # an open mesh
             for d, n in enumerate(index.shape)]
    grids[dim] = index
    return tuple(grids)


def _crop(x, shape, dim):
    """`x` cut to `shape` in every dim but `dim` (PyTorch lets index be smaller than input)."""
    return x[tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(shape))]


# --- gather ------------------------------------------------------------------------------------
def _gather_forward(xp, x, index, dim):
    return x[_positions(xp, "gather", index, x.shape[dim], dim)]


def _gather_infer(x: Spec, index: Spec, dim):
    _check_index("gather", x, index, dim)
    return index.shape, x.dtype


_gather = define("gather", forward=_gather_forward, infer=_gather_infer,
                 grads=(lambda g, x, index, dim: scatter_add(zeros_like(x), dim, index, g), None),
                 onnx=onnx_rules.gather, public="gather", methods="gather")


@binds(_gather)
@accepts_out
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """``out[i][j] = input[index[i][j]][j]`` for dim 0 (and so on): values picked along `dim`.
    (`sparse_grad=True` is refused: dongjing has no sparse tensors.)"""
    if sparse_grad:
        raise ArgumentError("gather: sparse_grad=True is not supported (dongjing has no sparse "
                            "tensors); the gradient is dense with sparse_grad=False")
    x, index = as_tensor(input), as_tensor(index)
    return apply(_gather, x, index, dim=inf.normalize_dim("gather", dim, x.ndim))


# --- scatter_add / scatter ---------------------------------------------------------------------
def _scatter_infer(name):
    def infer(x: Spec, index: Spec, src: Spec, dim):
        _check_index(name, x, index, dim, src)
        return x.shape, dtypes.promote(x.dtype, src.dtype)

    return infer


def _scatter_add_forward(xp, x, index, src, dim):
    out = x.copy()
    xp.add.at(out, _positions(xp, "scatter_add", index, x.shape[dim], dim),
              _crop(src, index.shape, -1))
    return out


def _scatter_forward(xp, x, index, src, dim):
    out = x.copy()
    out[_positions(xp, "scatter", index, x.shape[dim], dim)] = _crop(src, index.shape, -1)
    return out


def _src_grad(g, x, index, src, dim):
    picked = gather(g, dim, index)
    if tuple(src.shape) == tuple(index.shape):
        return picked
    # src larger than index: the elements beyond it were not used (their gradient is 0)

    if not inf.known(index.shape):
        raise ShapeError("scatter: the gradient of a src larger than index needs known shapes")
    return getitem_grad(picked, src, [], tuple(("slice", 0, n, None) for n in index.shape))


_scatter_add = define(
    "scatter_add", forward=_scatter_add_forward, infer=_scatter_infer("scatter_add"),
    grads=(lambda g, x, index, src, dim: g, None, _src_grad),
    onnx=onnx_rules.scatter("add"), public="scatter_add", methods="scatter_add",
    doc="A copy of input with src added at the positions index names along dim.")
_scatter = define(
    "scatter", forward=_scatter_forward, infer=_scatter_infer("scatter"),
    grads=(lambda g, x, index, src, dim: scatter(g, dim, index, 0.0), None, _src_grad),
    onnx=onnx_rules.scatter(None), public="scatter", methods="scatter",
    doc="A copy of input with src written at the positions index names along dim.")


def _scatter_args(name, input, dim, index, src):
    x, index = as_tensor(input), as_tensor(index)
    if isinstance(src, (bool, int, float)):
        src = full_like(index, src, dtype=x.dtype)
    x, src = pair(x, src)
    return x, index, src, inf.normalize_dim(name, dim, x.ndim)


@binds(_scatter_add)
def scatter_add(input: TensorLike, dim: int, index: TensorLike, src: TensorLike) -> Tensor:
    """A copy of `input` with `src[i][j]` added at ``[index[i][j]][j]`` (dim 0; repeats add)."""
    x, index, src, dim = _scatter_args("scatter_add", input, dim, index, src)
    return apply(_scatter_add, x, index, src, dim=dim)


@binds(_scatter)
def scatter(input: TensorLike, dim: int, index: TensorLike, src: TensorLike | None = None, *,
            value: Number | None = None, reduce: str | None = None) -> Tensor:
    """A copy of `input` with `src` (a tensor, or the number `value`) written at ``index``.

    ``reduce="add"`` adds instead (as `scatter_add`); other reductions are refused.
    """
    if (src is None) == (value is None):
        raise ShapeError("scatter: give exactly one of src and value")
    src = value if src is None else src
    if reduce == "add":
        return scatter_add(input, dim, index, src)
    if reduce is not None:
        raise ShapeError(f"scatter: reduce={reduce!r} is not supported (use None or 'add')")
    x, index, src, dim = _scatter_args("scatter", input, dim, index, src)
    return apply(_scatter, x, index, src, dim=dim)


# --- composed selections ----------------------------------------------------------------------
def _index_in_range_forward(xp, index, x, dim, func):
    size = x.shape[dim]
    if index.size:  # two passes over the indices: small next to the rows they pick
        low, high = index.min(), index.max()
        if low < 0 or high >= size:
            bad = int(low) if low < 0 else int(high)
            raise IndexOutOfRangeError(
                f"{func}: index {bad} is out of range for dim {dim} of size {size} (indices "
                f"must lie in [0, {size}); negative indices are refused, as in PyTorch)")
    return index


def _index_in_range_infer(index: Spec, x: Spec, dim, func):
    if index.dtype.kind not in "iu":
        raise DTypeError(f"{func}: index must be an integer tensor, got {index.dtype}")
    return index.shape, index.dtype


def _index_in_range_onnx(e, node, ins):
    return e.node("Identity", ins[:1])  # the check runs in dongjing only


_declare_short_path("scatter.index_in_range", __name__, "eager indices checked by the op's "
                    "forward directly, without a dispatch and a tape node")


# `index` itself, after checking at run time (eagerly, in a Session, under jit) that every
# entry addresses a slice of `x` along `dim`: index_select and embedding read no wrapped rows
_index_in_range = define("index_in_range", forward=_index_in_range_forward,
                         infer=_index_in_range_infer, onnx=_index_in_range_onnx,
                         doc="The index, checked to lie in [0, size of x along dim).")


def index_in_range(index, x, dim: int, func: str):
    """`index` (an integer tensor), raising IndexOutOfRangeError naming `func` when an entry is
    negative or not below `x.shape[dim]` (checked when the values exist)."""
    # short path: scatter.index_in_range
    if _short.on and index._node is None and x._node is None:
        if index.dtype.kind not in "iu":
            _index_in_range_infer(index, x, dim, func)  # raises
        _index_in_range_forward(None, index._data, x._data, dim, func)
        return index
    return apply(_index_in_range, index, x, dim=dim, func=func)


@accepts_out
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices of `input` at the 1-d integer `index` along `dim` (composed from indexing)."""
    x, index = as_tensor(input), as_tensor(index)
    if len(index.shape) > 1:
        raise ShapeError(f"index_select: index must be 1-d, got shape {inf.fmt(index.shape)}")
    if index.dtype.kind not in "iu":
        raise DTypeError(f"index_select: index must be an integer tensor, got {index.dtype}")
    dim = inf.normalize_dim("index_select", dim, x.ndim)
    index = index_in_range(index.reshape(-1), x, dim, "index_select")
    return getitem(x, (slice(None),) * dim + (index,))


def masked_fill(input: TensorLike, mask: TensorLike, value: TensorLike) -> Tensor:
    """`input` with `value` wherever the (broadcast) bool `mask` is true."""
    x, mask = as_tensor(input), as_tensor(mask)
    if mask.dtype.kind != "b":
        raise DTypeError(f"masked_fill: mask must be a bool tensor, got {mask.dtype}")
    value = as_tensor(value, x)
    if value.ndim:
        raise ShapeError(f"masked_fill: value must be a number or a 0-d tensor, got shape "
                         f"{inf.fmt(value.shape)}")
    if value.dtype != x.dtype:
        value = cast(value, x.dtype)
    return where(mask, value, x)
