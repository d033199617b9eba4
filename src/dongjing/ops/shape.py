"""Shape primitives: reshape, permute, expand, squeeze/unsqueeze, concat; stack etc. composed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import dtypes
from ..autocasting import autocast_policy
from ..core import infer as inf
from ..core.registry import OPS, Kind, Onnx, Spec, binds, define
from ..core.torch_args import dim_aliases
from ..dispatch import apply, apply1, apply2
from ..errors import ArgumentError, ShapeError
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out
from . import onnx_rules
from .convert import as_tensor
from .elementwise import cast, zeros_like

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..types import Dim, TensorLike

S = Kind.OPAQUE


# --- reshape ------------------------------------------------------------------------------
def _reshape_infer(x: Spec, shape):
    known_in = inf.numel(x.shape)
    if list(shape).count(-1) > 1:
        raise ShapeError(f"reshape: only one dim may be -1, got {tuple(shape)}")
    rest = 1
    for d in shape:
        if d != -1:
            rest *= d
    out = []
    for d in shape:
        if d == -1:
            if known_in is None:
                out.append(None)
            elif rest == 0 or known_in % rest:
                raise ShapeError(
                    f"reshape: cannot reshape a tensor of shape {inf.fmt(x.shape)} "
                    f"({known_in} elements) to {tuple(shape)}"
                )
            else:
                out.append(known_in // rest)
        else:
            out.append(d)
    if known_in is not None and -1 not in shape and rest != known_in:
        raise ShapeError(
            f"reshape: cannot reshape a tensor of shape {inf.fmt(x.shape)} ({known_in} "
            f"elements) to {tuple(shape)} ({rest} elements)"
        )
    return tuple(out), x.dtype


_reshape = define("reshape", forward=lambda xp, x, shape: xp.reshape(x, shape),
                  infer=_reshape_infer, grads=(lambda g, x, shape: reshape_like(g, x),), kind=S,
                  keeps_dtype=True, grad_name="ViewBackward0", onnx=onnx_rules.reshape,
                  methods=("reshape", "view"), public="reshape")


def sizes_argument(sizes: tuple):
    """The sizes of a method called `t.view(2, 3)` or `t.view((2, 3))`: one tuple."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        return tuple(sizes[0])
    return sizes


@binds(_reshape)
def reshape(input: Tensor, shape) -> Tensor:
    """`input` with a new shape of the same number of elements (one dim may be -1)."""
    x = as_tensor(input)
    shape = (shape,) if isinstance(shape, int) else shape
    try:
        shape = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise ShapeError(f"reshape: the new shape {tuple(shape)} of a tensor of shape "
                         f"{inf.fmt(x.shape)} must be ints (one may be -1; an unknown size "
                         f"cannot be given: use -1 or reshape_like)") from None
    if x.shape == shape:
        return x
    return apply1(_reshape, x, shape=shape)


_reshape_like = define(
    "reshape_like", forward=lambda xp, x, like: xp.reshape(x, like.shape),
    infer=lambda x, like: (like.shape, x.dtype),
    grads=(lambda g, x, like: reshape_like(g, x), None), kind=S, grad_name="ViewBackward0",
    onnx=onnx_rules.reshape_like, methods=("reshape_as", "view_as"),
)


@binds(_reshape_like)
def reshape_like(x, like):
    """`x` reshaped to the (run-time) shape of `like`."""
    x, like = as_tensor(x), as_tensor(like)
    if x._node is None and like._node is None and x._data.shape == like._data.shape:
        return x
    return apply2(_reshape_like, x, like)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims `start_dim..end_dim` into one."""
    x = as_tensor(input)
    n = x.ndim
    start = inf.normalize_dim("flatten", start_dim, max(n, 1))  # a 0-d tensor takes 0 and -1
    end = inf.normalize_dim("flatten", end_dim, max(n, 1))
    if n == 0:
        return reshape(x, (1,))
    if start > end:
        raise ArgumentError(f"flatten: start_dim ({start_dim}) cannot come after end_dim "
                            f"({end_dim}) for a tensor of {n} dims")
    shape = x.shape
    merged = shape[start : end + 1]
    size = -1 if any(d is None for d in merged) else inf.numel(merged)
    new = [(-1 if d is None else d) for d in shape[:start]] + [size] + [
        (-1 if d is None else d) for d in shape[end + 1 :]
    ]
    if new.count(-1) > 1:
        raise ShapeError(f"flatten: shape {inf.fmt(shape)} has too many unknown dims")
    return reshape(x, tuple(new))


# --- permute / transpose ------------------------------------------------------------------
def _permute_infer(x: Spec, dims):
    if sorted(dims) != list(range(len(x.shape))):
        raise ShapeError(
            f"permute: dims {tuple(dims)} are not a permutation of the {len(x.shape)} dims of "
            f"a tensor of shape {inf.fmt(x.shape)}"
        )
    return tuple(x.shape[d] for d in dims), x.dtype


def _permute_grad(g, x, dims):
    return permute(g, tuple(sorted(range(len(dims)), key=dims.__getitem__)))


_permute = define("permute", forward=lambda xp, x, dims: x.transpose(dims),  # no wrapper
                  infer=_permute_infer, grads=(_permute_grad,), kind=S, keeps_dtype=True,
                  onnx=Onnx("Transpose", {"perm": "dims"}), methods="permute", public="permute")


@binds(_permute)
def permute(input: Tensor, dims) -> Tensor:
    """Reorder the dims of `input`."""
    x = as_tensor(input)
    dims = tuple(inf.normalize_dim("permute", d, x.ndim) for d in dims)
    return apply1(_permute, x, dims=dims)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dims."""
    x = as_tensor(input)
    n = x.ndim
    if n < 2:
        return x
    dims = list(range(n))
    a, b = inf.normalize_dim("transpose", dim0, n), inf.normalize_dim("transpose", dim1, n)
    dims[a], dims[b] = dims[b], dims[a]
    return apply1(_permute, x, dims=tuple(dims))


# --- expand / broadcast -------------------------------------------------------------------
def _expand_infer(x: Spec, shape):
    if len(shape) < len(x.shape):
        raise ShapeError(f"expand: cannot expand shape {inf.fmt(x.shape)} to {tuple(shape)}")
    lead = len(shape) - len(x.shape)
    out = list(shape[:lead])
    for d_in, d_out in zip(x.shape, shape[lead:]):
        if d_out == -1:
            out.append(d_in)
        elif d_in not in (1, None, d_out):
            raise ShapeError(
                f"expand: cannot expand shape {inf.fmt(x.shape)} to {tuple(shape)}"
            )
        else:
            out.append(d_out)
    return tuple(out), x.dtype


def _expand_forward(xp, x, shape):
    lead = len(shape) - x.ndim
    target = tuple(x.shape[i - lead] if d == -1 else d for i, d in enumerate(shape))
    return xp.broadcast_to(x, target)


# the gradient is g itself: the engines reduce it to the input's shape
_expand = define("expand", forward=_expand_forward, infer=_expand_infer,
                 grads=(lambda g, x, shape: g,), kind=S, keeps_dtype=True, onnx=onnx_rules.expand,
                 methods="expand", public="expand")


@binds(_expand)
def expand(input: Tensor, *size: int | Sequence[int]) -> Tensor:
    """`input` broadcast (without copying) to `size`; -1 keeps a dim."""
    return apply1(_expand, as_tensor(input), shape=tuple(int(d) for d in sizes_argument(size)))


def broadcast_to(input: Tensor, shape) -> Tensor:
    """`input` broadcast (without copying) to `shape`; -1 keeps a dim."""
    return expand(input, shape)


def _broadcast_like_forward(xp, x, like):
    if like.size <= 4096:  # small: a filled copy is cheaper than a broadcast view
        out = xp.empty(like.shape, x.dtype)
        out[...] = x
        return out
    return xp.broadcast_to(x, like.shape)


def _check_broadcast_like(shape: tuple, like: tuple) -> None:
    fits = len(shape) <= len(like) and all(
        d in (1, None) or t is None or d == t for d, t in zip(reversed(shape), reversed(like)))
    if not fits:
        raise ShapeError(f"broadcast_to_like: cannot broadcast a tensor of shape "
                         f"{inf.fmt(shape)} to shape {inf.fmt(like)}")


def _broadcast_like_infer(x: Spec, like: Spec):
    _check_broadcast_like(x.shape, like.shape)
    return like.shape, x.dtype


_broadcast_like = define("broadcast_to_like", forward=_broadcast_like_forward,
                         infer=_broadcast_like_infer, grads=(lambda g, x, like: g, None), kind=S,
                         grad_name="ExpandBackward0", onnx=onnx_rules.broadcast_to_like,
                         methods="expand_as")


@binds(_broadcast_like)
def broadcast_to_like(x, like):
    """`x` broadcast to the (run-time) shape of `like`."""
    x, like = as_tensor(x), as_tensor(like)
    if x._node is None and like._node is None and x._data.shape == like._data.shape:
        return x
    if x._node is not None or like._node is not None or len(x._data.shape) > len(like._data.shape):
        # eager dispatch asks infer only for dtypes; NumPy's broadcasting refuses every other
        # misfit eagerly, but would accept dropping leading dims
        _check_broadcast_like(x.shape, like.shape)
    return apply2(_broadcast_like, x, like)


# --- squeeze / unsqueeze ------------------------------------------------------------------
def _unsqueeze_infer(x: Spec, dim):
    shape = list(x.shape)
    shape.insert(dim, 1)
    return tuple(shape), x.dtype


def _unsqueeze_forward(xp, x, dim):
    # a view by indexing (dim is normalized by the binding): a fifth of expand_dims' cost
    return x[(slice(None),) * dim + (None,)]


_unsqueeze = define("unsqueeze", forward=_unsqueeze_forward,
                    infer=_unsqueeze_infer, grads=(lambda g, x, dim: squeeze(g, dim),), kind=S,
                    keeps_dtype=True, onnx=onnx_rules.unsqueeze, methods="unsqueeze",
                    public="unsqueeze")


@binds(_unsqueeze)
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a dim of size 1 at `dim`."""
    x = as_tensor(input)
    dim = inf.normalize_dim("unsqueeze", dim, x.ndim + 1)
    return apply1(_unsqueeze, x, dim=dim)


def _squeeze_infer(x: Spec, dim):
    for d in dim:
        if x.shape[d] not in (1, None):
            raise ShapeError(
                f"squeeze: dim {d} of shape {inf.fmt(x.shape)} has size {x.shape[d]}, not 1"
            )
    return tuple(s for i, s in enumerate(x.shape) if i not in dim), x.dtype


def _squeeze_forward(xp, x, dim):
    for d in dim:  # a dim unknown when the graph was built is checked when it runs
        if x.shape[d] != 1:
            raise ShapeError(f"squeeze: dim {d} of shape {inf.fmt(x.shape)} has size "
                             f"{x.shape[d]}, not 1")
    return xp.squeeze(x, axis=dim)


_squeeze = define("squeeze", forward=_squeeze_forward,
                  infer=_squeeze_infer, grads=(lambda g, x, dim: reshape_like(g, x),), kind=S,
                  keeps_dtype=True, onnx=onnx_rules.squeeze, methods="squeeze", public="squeeze")


@binds(_squeeze)
def squeeze(input: Tensor, dim: Dim = None) -> Tensor:
    """Remove dims of size 1 (all of them, or those in `dim`)."""
    x = as_tensor(input)
    shape = x.shape
    if dim is None:
        if any(d is None for d in shape):
            raise ShapeError(
                f"squeeze: shape {inf.fmt(shape)} has unknown dims; name the dims to squeeze"
            )
        dims = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        # PyTorch: squeezing a dim whose size is not 1 leaves it alone
        dims = tuple(d for d in inf.normalize_dims("squeeze", dim, x.ndim) if shape[d] in (1, None))
    if not dims:
        return x
    return apply1(_squeeze, x, dim=dims)


# --- concat / stack -----------------------------------------------------------------------
def _concat_infer(*xs: Spec, dim):
    first = xs[0]
    n = len(first.shape)
    total = 0
    for x in xs:
        if len(x.shape) != n:
            raise ShapeError(
                f"concat: all tensors need {n} dims; got shapes "
                f"{', '.join(inf.fmt(s.shape) for s in xs)}"
            )
        for i, (a, b) in enumerate(zip(first.shape, x.shape)):
            if i != dim and a is not None and b is not None and a != b:
                raise ShapeError(
                    f"concat: shapes {', '.join(inf.fmt(s.shape) for s in xs)} differ "
                    f"outside dim {dim}"
                )
        total = None if total is None or x.shape[dim] is None else total + x.shape[dim]
    dtype = first.dtype
    for x in xs[1:]:
        dtype = dtypes.promote(dtype, x.dtype)
    shape = list(first.shape)
    shape[dim] = total
    return tuple(shape), dtype


def _concat_vjp(g, inputs, out, needs, attrs):
    # cat promotes mixed dtypes: each input's part of g is cast back to that input's dtype (as
    # PyTorch's gradients are), or a float32 input would get a float64 gradient

    return tuple(p if p is None or p.dtype == x.dtype else cast(p, x.dtype)
                 for p, x in zip(_concat_parts(g, inputs, needs, attrs["dim"]), inputs))


def _concat_parts(g, inputs, needs, dim):
    if any(x.shape[dim] is None for x in inputs):
        return _concat_vjp_at_run_time(g, inputs, needs, dim)
    grads, start = [], 0
    for x, need in zip(inputs, needs):
        size = x.shape[dim]
        if need:
            index = (slice(None),) * dim + (slice(start, start + size),)
            grads.append(g[index])
        else:
            grads.append(None)
        start += size
    return tuple(grads)


def _concat_vjp_at_run_time(g, inputs, needs, dim):
    """concat's gradient where a size along `dim` is unknown: each input's part of `g` is taken
    by integer positions computed when the graph runs (offset + 0..size-1)."""
    # declared by ops.reduce and ops.scan, which are built on this module: read from the table
    count, reduce_sum, cumsum = OPS["count"].binding, OPS["sum"].binding, OPS["cumsum"].binding
    grads, start = [], None
    for x, need in zip(inputs, needs):
        size = count(x, dim=dim, dtype=dtypes.int64)
        if need:
            others = tuple(d for d in range(len(x.shape)) if d != dim)
            zeros = zeros_like(x, dtype=dtypes.int64)
            line = reduce_sum(zeros, dim=others) if others else zeros  # (size,) zeros
            positions = cumsum(line + 1, 0) - 1
            if start is not None:
                positions = positions + start
            grads.append(g[(slice(None),) * dim + (positions,)])
        else:
            grads.append(None)
        start = size if start is None else start + size
    return tuple(grads)


def _concat_forward(xp, *xs, dim):
    first = xs[0].dtype
    try:
        for x in xs:
            if x.dtype != first:  # PyTorch's promotion (int64 + float32 -> float32), the
                # infer rule's, not NumPy's (float64), so graphs and jit agree with eager
                dtype = _promoted(xs)
                return xp.concatenate(xs, axis=dim, dtype=dtype, casting="unsafe")
        return xp.concatenate(xs, axis=dim)
    except ValueError:  # sizes that were unknown when the graph was built, fed unequal
        raise ShapeError(f"concat: shapes {', '.join(inf.fmt(x.shape) for x in xs)} differ "
                         f"outside dim {dim}") from None


def _promoted(xs):
    dtype = xs[0].dtype
    for x in xs[1:]:
        dtype = dtypes.promote(dtype, x.dtype)
    return dtype


_concat = define("concat", forward=_concat_forward,
                 infer=_concat_infer, vjp=_concat_vjp, kind=S, grad_name="CatBackward0",
                 onnx=onnx_rules.concat, public=("concat", "cat"))


@binds(_concat)
@autocast_policy("cat")
@accepts_out
@dim_aliases
def concat(tensors: Sequence[TensorLike], dim: int = 0) -> Tensor:
    """Join tensors along an existing dim."""
    tensors = [as_tensor(t) for t in tensors]
    if not tensors:
        raise ShapeError("concat: needs at least one tensor")
    dim = inf.normalize_dim("concat", dim, tensors[0].ndim)
    return apply(_concat, *tensors, dim=dim)


cat = concat


@autocast_policy("stack")
@accepts_out
@dim_aliases
def stack(tensors: Sequence[TensorLike], dim: int = 0) -> Tensor:
    """Join tensors along a new dim (composed: unsqueeze + concat)."""
    tensors = [as_tensor(t) for t in tensors]
    if not tensors:
        raise ShapeError("stack: needs at least one tensor")
    first = tensors[0].shape
    same = all(len(t.shape) == len(first) and all(
        a is None or b is None or a == b for a, b in zip(first, t.shape)) for t in tensors)
    if not same:  # (an unknown dim may be any size: (1, None) and (None, 1) can stack)
        raise ShapeError(f"stack: all tensors need the same shape; got "
                         f"{', '.join(inf.fmt(t.shape) for t in tensors)}")
    dim = inf.normalize_dim("stack", dim, tensors[0].ndim + 1)
    return concat([unsqueeze(t, dim) for t in tensors], dim)

