"""TF1's array functions beyond math_ops: shape/size/rank read at run time, unstack, split,
tile, pad, slice, gather, boolean_mask, sequence_mask, cumsum, tensordot, einsum, diag,
unique, arg_min/arg_max, on dongjing's ops (so their gradients are those ops' rules)."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

import numpy as np

from ... import ops as _ops
from ...dispatch import apply, apply1
from ...errors import GraphError, ShapeError
from ...graph.builder import constant
from ...nn.resample import pad as _pad
from ...tensor import Tensor
from . import math_ops as _math_ops
from .dtypes import as_dtype
from .dynamic_shape import (
    arange,
    constant_value,
    fill_op,
    shape_hint,
    shape_of,
    shape_tensor,
    slice_op,
    tile_op,
    unique_index_op,
    unique_op,
    where_op,
    with_shape_op,
)
from .graphs import building, tf_function
from .math_ops import _t, argmax, argmin
from .unsupported import not_provided

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...types import DTypeLike, TensorLike


def _int(value, what: str) -> int:
    known = constant_value(value)
    if known is None:
        not_provided(f"{what} computed at run time")
    return int(known)


@tf_function
def shape(input: TensorLike, name: str | None = None,  # noqa: A002
          out_type: DTypeLike = "int32") -> Tensor:
    """The shape of `input` as an int vector, read when the graph runs (so unknown dims, such
    as the batch size of a placeholder, are the fed ones)."""
    out = shape_of(_t(input))
    out_type = as_dtype(out_type)
    return out if out.dtype == out_type else _ops.cast(out, out_type)


@tf_function
def size(input: TensorLike, name: str | None = None, out_type: DTypeLike = "int32"  # noqa: A002
         ) -> Tensor:
    """The number of elements of `input` (known at run time)."""
    x = _t(input)
    dtype = as_dtype(out_type)
    if None not in x.shape:
        return constant(np.asarray(int(np.prod(x.shape, dtype=np.int64)), dtype))
    return _ops.cast(_ops.prod(_ops.cast(shape_of(x), np.int64), 0), dtype)


@tf_function
def rank(input: TensorLike, name: str | None = None) -> Tensor:  # noqa: A002
    """The number of dims of `input` (an int32 scalar tensor)."""
    return constant(np.asarray(_t(input).ndim, np.int32))


@tf_function
def unstack(value: TensorLike, num: int | None = None, axis: int = 0, name: str = "unstack"
            ) -> list[Tensor]:
    """The slices of `value` along `axis`, as a list (`num` must match that dim's size)."""
    x = _t(value)
    axis = int(axis)
    n = x.shape[axis]
    if n is None:
        if num is None:
            raise ShapeError(f"tf.unstack: dim {axis} of shape {x.shape} is unknown; give num")
        n = int(num)
    elif num is not None and int(num) != n:
        raise ShapeError(f"tf.unstack: num={num} but dim {axis} of shape {x.shape} has size {n}")
    key = [_py_slice(0, -1)] * (axis % x.ndim)
    return [x[tuple(key + [i])] for i in range(n)]


@tf_function
def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """`value` cut along `axis` into `num_or_size_splits` equal parts, or parts of the listed
    sizes (one size may be -1: the rest)."""
    x = _t(value)
    axis = _int(axis, "tf.split's axis")
    n = x.shape[axis]
    if isinstance(num_or_size_splits, Tensor) and num_or_size_splits.ndim == 0:
        num_or_size_splits = _int(num_or_size_splits, "tf.split's number of parts")
    if isinstance(num_or_size_splits, (int, np.integer)):
        parts = int(num_or_size_splits)
        if n is None or parts <= 0 or n % parts:
            raise ShapeError(f"tf.split: dim {axis} of shape {x.shape} does not split into "
                             f"{parts} equal parts")
        sizes = [n // parts] * parts
    else:
        known = constant_value(num_or_size_splits) if isinstance(num_or_size_splits, Tensor) \
            else np.asarray(num_or_size_splits)
        if known is None:
            not_provided("tf.split with sizes computed at run time")
        sizes = [int(s) for s in known.reshape(-1)]
        if sizes.count(-1) == 1 and n is not None:
            sizes[sizes.index(-1)] = n - (sum(sizes) + 1)
        if n is not None and (sum(sizes) != n or min(sizes) < 0):
            raise ShapeError(f"tf.split: sizes {sizes} do not add up to dim {axis} of shape "
                             f"{x.shape}")
    return list(_ops.split(x, sizes, axis))


@tf_function
def tile(input: TensorLike, multiples: Sequence[int] | Tensor, name: str | None = None  # noqa: A002
         ) -> Tensor:
    """`input` repeated `multiples[i]` times along each dim i."""
    x = _t(input)
    reps = shape_tensor(multiples, "tf.tile")
    if isinstance(reps, Tensor):  # read at run time; known dims stay known where both are
        known = shape_hint(reps)
        hint = tuple(None if m is None or d is None else m * d for m, d in zip(known, x.shape))
        return apply(tile_op, x, reps, hint=hint)
    if len(reps) != x.ndim:
        raise ShapeError(f"tf.tile: multiples {list(reps)} need one entry per dim of {x.shape}")
    return _ops.tile(x, reps)


_PAD_MODES = {"CONSTANT": "constant", "REFLECT": "reflect"}


@tf_function
def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    """`tensor` padded by paddings[i] = [before, after] along each dim i."""
    x = _t(tensor)
    known = constant_value(paddings) if isinstance(paddings, Tensor) else np.asarray(paddings)
    if known is None:
        not_provided("tf.pad with paddings computed at run time")
    known = known.astype(np.int64)
    if known.shape != (x.ndim, 2):
        raise ShapeError(f"tf.pad: paddings of shape {known.shape} do not fit an input of "
                         f"shape {x.shape} (need ({x.ndim}, 2))")
    if str(mode).upper() not in _PAD_MODES:
        not_provided(f"tf.pad(mode={mode!r})")
    flat = [int(v) for pair in known[::-1] for v in pair]
    value = float(constant_values) if str(mode).upper() == "CONSTANT" else None
    return _pad(x, flat, mode=_PAD_MODES[str(mode).upper()], value=value)


@tf_function
def slice(input_, begin, size, name=None):  # noqa: A001
    """The block of `input_` starting at `begin` with `size` (-1: to the end of that dim)."""
    x = _t(input_)
    begin_k = constant_value(begin) if isinstance(begin, Tensor) else np.asarray(begin)
    size_k = constant_value(size) if isinstance(size, Tensor) else np.asarray(size)
    if begin_k is None or size_k is None:  # read at run time
        begin_t = shape_tensor(begin, "tf.slice's begin")
        size_t = shape_tensor(size, "tf.slice's size")
        begin_t, size_t = (v if isinstance(v, Tensor) else _int32_vector(v)
                           for v in (begin_t, size_t))
        hint = tuple(None if s is None or s < 0 else s for s in shape_hint(size_t))
        return apply(slice_op, x, begin_t, size_t, hint=hint)
    begin_k, size_k = begin_k.reshape(-1), size_k.reshape(-1)
    if len(begin_k) != x.ndim or len(size_k) != x.ndim:
        raise ShapeError(f"tf.slice: begin {list(begin_k)} and size {list(size_k)} need one "
                         f"entry per dim of {x.shape}")
    key = tuple(_py_slice(int(b), int(s)) for b, s in zip(begin_k, size_k))
    return x[key]


def _int32_vector(values):
    return constant(np.asarray(values, np.int32))


def _py_slice(begin: int, size: int):
    return builtins.slice(begin, None if size == -1 else begin + size)


@tf_function
def gather(params, indices, validate_indices=None, name=None, axis=0, batch_dims=0):
    """params' slices at `indices` along `axis`: shape params.shape[:axis] + indices.shape +
    params.shape[axis+1:]; its gradient adds into the gathered rows."""
    if batch_dims:
        not_provided("tf.gather(batch_dims=...)")
    x, idx = _t(params), _t(indices)
    if idx.dtype.kind not in "iu":
        raise GraphError(f"tf.gather: indices must be integers, got {idx.dtype}")
    axis = _int(axis, "tf.gather's axis") % x.ndim

    return x[(builtins.slice(None),) * axis + (idx,)]


@tf_function
def boolean_mask(tensor: TensorLike, mask: TensorLike, name: str = "boolean_mask",
                 axis: int | None = None) -> Tensor:
    """The entries of `tensor` where the (leading dims') `mask` is true, flattened over the
    mask's dims."""
    x, m = _t(tensor), _t(mask)
    if axis not in (None, 0):
        not_provided("tf.boolean_mask(axis=...) other than 0")
    if m.dtype.kind != "b":
        raise GraphError(f"tf.boolean_mask: mask must be bool, got {m.dtype}")
    if m.ndim == 0 or m.ndim > x.ndim:
        raise ShapeError(f"tf.boolean_mask: a mask of shape {m.shape} does not fit a tensor "
                         f"of shape {x.shape}")
    return x[m]


@tf_function
def sequence_mask(lengths, maxlen=None, dtype="bool", name=None):
    """mask[..., j] = j < lengths[...] for j < maxlen (default: the largest length)."""
    lengths = _t(lengths)
    if maxlen is None:
        limit = _ops.amax(lengths)
    else:
        limit = maxlen
    known = constant_value(limit) if isinstance(limit, Tensor) else np.asarray(limit)
    if known is not None:
        steps = constant(np.arange(int(known), dtype=np.int64))
    else:
        steps = arange(*_scalars(0, limit, 1), np.int64)
    mask = _ops.lt(_ops.cast(steps, np.int64), _ops.unsqueeze(_ops.cast(lengths, np.int64), -1))
    dtype = as_dtype(dtype)
    return mask if dtype.kind == "b" else _ops.cast(mask, dtype)


@tf_function
def cumsum(x: TensorLike, axis: int | Tensor = 0, exclusive: bool = False, reverse: bool = False,
           name: str | None = None) -> Tensor:
    """Running sums along `axis` (exclusive: each sum leaves its own element out)."""
    x = _t(x)
    axis = _int(axis, "tf.cumsum's axis")
    out = _ops.scan.running_sum(x, axis, reverse=bool(reverse))
    return out - x if exclusive else out


@tf_function
def tensordot(a: TensorLike, b: TensorLike,
              axes: int | tuple[int | Sequence[int], int | Sequence[int]], name: str | None = None
              ) -> Tensor:
    """Sum of products over `axes` (an int n: a's last n with b's first n; or two lists)."""
    a, b = _t(a), _t(b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        a_axes, b_axes = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        a_axes, b_axes = axes
        a_axes = [a_axes] if isinstance(a_axes, (int, np.integer)) else list(a_axes)
        b_axes = [b_axes] if isinstance(b_axes, (int, np.integer)) else list(b_axes)
    if len(a_axes) != len(b_axes):
        raise ShapeError(f"tf.tensordot: axes {a_axes} and {b_axes} differ in length")
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    a_sub = [next(letters) for _ in range(a.ndim)]
    b_sub = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(a_axes, b_axes):
        b_sub[j % b.ndim] = a_sub[i % a.ndim]
    summed = {a_sub[i % a.ndim] for i in a_axes}
    out = [c for c in a_sub if c not in summed] + [c for c in b_sub if c not in summed]
    return _ops.einsum(f"{''.join(a_sub)},{''.join(b_sub)}->{''.join(out)}", a, b)


@tf_function
def einsum(equation: str, *inputs: TensorLike, name: str | None = None) -> Tensor:
    """Einstein summation (dongjing's einsum)."""
    return _ops.einsum(equation, *[_t(t) for t in inputs])


@tf_function
def diag(diagonal: TensorLike, name: str | None = None) -> Tensor:
    """The square matrix with `diagonal` on its diagonal (1-d input)."""
    d = _t(diagonal)
    if d.ndim != 1:
        not_provided(f"tf.diag of a {d.ndim}-d tensor (only 1-d diagonals)")
    return _ops.diag(d)


@tf_function
def diag_part(input: TensorLike, name: str | None = None) -> Tensor:  # noqa: A002
    """The diagonal of a square matrix."""
    x = _t(input)
    if x.ndim != 2:
        not_provided(f"tf.diag_part of a {x.ndim}-d tensor (only matrices)")
    return _ops.diag(x)


@tf_function
def unique(x: TensorLike, out_idx: DTypeLike = "int32", name: str | None = None
           ) -> tuple[Tensor, Tensor]:
    """(y, idx): the distinct values of 1-d `x` in order of first appearance, and each
    element's position in y."""
    x = _t(x)
    if x.ndim != 1:
        raise ShapeError(f"tf.unique: needs a 1-d tensor, got shape {x.shape}")
    out_idx = as_dtype(out_idx)
    return apply1(unique_op, x), apply1(unique_index_op, x, dtype=out_idx)


def _scalars(*values):
    return [v if isinstance(v, Tensor) else constant(np.asarray(v, np.int64))
            for v in (_ops.cast(v, np.int64) if isinstance(v, Tensor) else v for v in values)]


@tf_function
def where_indices(condition):
    """tf.where(condition): the (n, rank) int64 indices of the true entries."""
    return apply1(where_op, _t(condition))


def fill_to(dims, value, dtype=None):
    """A tensor of `value` with dims given as a tensor (read at run time)."""
    value = _t(value) if dtype is None else _ops.cast(_t(value), dtype)
    if value.ndim != 0:
        value = _ops.reshape(value, ())
    return apply(fill_op, dims, value, hint=shape_hint(dims)) if isinstance(dims, Tensor) \
        else constant(np.full(dims, constant_value(value)))


def placeholder_with_default(input: TensorLike, shape: int | Sequence[int | None],  # noqa: A002
                             name: str | None = None) -> Tensor:
    """`input`'s value unless the tensor is fed (a feed may have any shape fitting `shape`)."""
    with building((input,)):
        x = _t(input)
        shape = (shape,) if isinstance(shape, int) else tuple(
            None if d is None else int(d) for d in shape)
        return apply1(with_shape_op, x, shape=shape)


def arg_max(input: TensorLike, dimension: int, name: str | None = None,  # noqa: A002
            output_type: DTypeLike = "int64") -> Tensor:
    """TF1's old spelling of tf.argmax."""
    return argmax(input, axis=dimension, output_type=output_type)


def arg_min(input: TensorLike, dimension: int, name: str | None = None,  # noqa: A002
            output_type: DTypeLike = "int64") -> Tensor:
    """TF1's old spelling of tf.argmin."""
    return argmin(input, axis=dimension, output_type=output_type)


_math_ops._array_ops.where_indices, _math_ops._array_ops.fill_to = where_indices, fill_to
