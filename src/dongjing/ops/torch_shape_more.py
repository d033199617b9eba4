"""More of PyTorch's shape, indexing and matrix-product functions under their PyTorch names:
compositions of the op table's primitives (reshape, slicing, gather/scatter, matmul, ...), so
they differentiate, trace and build graph nodes with no rule of their own. The `*_copy`
functions are PyTorch's copying forms of its views: dongjing's results are never aliases of
their input once a value is written through the copy, so each is the op followed by `clone`."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes
from ..core.torch_args import dim_aliases
from ..errors import ArgumentError, DTypeError, ShapeError
from ..tensor.out_argument import accepts_out
from ..tensor.transfer import constant_like
from .compare import ne
from .convert import as_tensor
from .elementwise import cast, clone, where, zeros_like
from .index import getitem
from .layout import chunk, narrow, split
from .scatter import index_select, masked_fill, scatter, scatter_add
from .shape import concat, flatten, reshape, stack, transpose
from .sorting import sort

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..tensor import Tensor
    from ..types import TensorLike

_GET = getitem


def _ints(name, values) -> list:
    return [int(v) for v in (values.tolist() if hasattr(values, "tolist") else values)]


def atleast_1d(*tensors):
    """Each input with at least one dim (a tuple when given several)."""
    out = [reshape(t, (1,)) if as_tensor(t).ndim == 0 else as_tensor(t) for t in
           _flat_args(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_2d(*tensors):
    """Each input with at least two dims (new dims in front)."""
    out = []
    for t in _flat_args(tensors):
        t = as_tensor(t)
        out.append(reshape(t, (1,) * (2 - t.ndim) + tuple(t.shape)) if t.ndim < 2 else t)
    return out[0] if len(out) == 1 else tuple(out)


def atleast_3d(*tensors):
    """Each input with at least three dims: (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    out = []
    for t in _flat_args(tensors):
        t = as_tensor(t)
        shape = {0: (1, 1, 1), 1: (1,) + tuple(t.shape) + (1,),
                 2: tuple(t.shape) + (1,)}.get(t.ndim)
        out.append(reshape(t, shape) if shape is not None else t)
    return out[0] if len(out) == 1 else tuple(out)


def _flat_args(tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return list(tensors[0])
    return list(tensors)


@accepts_out
def column_stack(tensors):
    """Stack 0-d and 1-d tensors as columns (and concatenate 2-d ones) along dim 1."""
    cols = []
    for t in tensors:
        t = as_tensor(t)
        cols.append(reshape(t, (-1, 1)) if t.ndim <= 1 else t)
    return concat(cols, 1)


@accepts_out
def dstack(tensors):
    """Concatenate along dim 2 after `atleast_3d`."""
    return concat([atleast_3d(t) for t in tensors], 2)


@accepts_out
def row_stack(tensors):
    """Concatenate along dim 0 after `atleast_2d` (an alias of `vstack`)."""
    return concat([atleast_2d(t) for t in tensors], 0)


def tensor_split(input: TensorLike, indices_or_sections: int | Sequence[int] | Tensor,
                 dim: int = 0) -> tuple[Tensor, ...]:
    """Split into `n` nearly equal parts (the first ones one longer), or at the given indices."""
    x = as_tensor(input)
    size = x.shape[dim]
    if isinstance(indices_or_sections, int) or (
            hasattr(indices_or_sections, "ndim") and indices_or_sections.ndim == 0):
        n = int(indices_or_sections)
        if n < 1:
            raise ArgumentError(f"tensor_split: sections must be positive, got {n}")
        base, extra = divmod(size, n)
        bounds = np.cumsum([0] + [base + (i < extra) for i in range(n)]).tolist()
    else:
        cuts = _ints("tensor_split", indices_or_sections)
        bounds = [0] + cuts + [size]
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        lo, hi = min(max(lo, 0), size), min(max(hi, 0), size)
        parts.append(narrow(x, dim, lo, max(hi - lo, 0)))
    return tuple(parts)


def _split_named(name, x, indices_or_sections, dim, min_ndim):
    x = as_tensor(x)
    if x.ndim < min_ndim:
        raise ShapeError(f"{name}: expects at least {min_ndim} dims, got shape {x.shape}")
    if isinstance(indices_or_sections, int) and x.shape[dim] % indices_or_sections:
        raise ShapeError(f"{name}: dim {dim} of size {x.shape[dim]} is not divisible into "
                         f"{indices_or_sections} parts")
    return tensor_split(x, indices_or_sections, dim)


def hsplit(input: TensorLike, indices_or_sections: int | Sequence[int] | Tensor) -> tuple[Tensor,
           ...]:
    """Split along dim 1 (dim 0 for 1-d inputs)."""
    x = as_tensor(input)
    return _split_named("hsplit", x, indices_or_sections, 1 if x.ndim > 1 else 0, 1)


def vsplit(input: TensorLike, indices_or_sections: int | Sequence[int] | Tensor) -> tuple[Tensor,
           ...]:
    """Split along dim 0 of a tensor with at least 2 dims."""
    return _split_named("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input: TensorLike, indices_or_sections: int | Sequence[int] | Tensor) -> tuple[Tensor,
           ...]:
    """Split along dim 2 of a tensor with at least 3 dims."""
    return _split_named("dsplit", input, indices_or_sections, 2, 3)


def split_with_sizes(input: TensorLike, split_sizes: Sequence[int] | Tensor,
                     dim: int = 0) -> tuple[Tensor, ...]:
    """Split into pieces of the given sizes along `dim` (they must add up to its size)."""
    x = as_tensor(input)
    sizes = _ints("split_with_sizes", split_sizes)
    if x.shape[dim] is not None and sum(sizes) != x.shape[dim]:
        raise ShapeError(f"split_with_sizes: sizes {sizes} do not add up to dim {dim} of shape "
                         f"{x.shape}")
    return split(x, sizes, dim)


def _diagonal_index(n1: int, n2: int, offset: int):
    rows = np.arange(max(0, -offset), min(n1, n2 - offset))
    return rows, rows + offset


def _known(name, x):
    if any(n is None for n in x.shape):
        raise ShapeError(f"{name}: needs a known shape, got {x.shape}")
    return tuple(x.shape)


def _positions(x) -> np.ndarray:
    """The flat position of each element of a tensor shaped like `x`."""
    return np.arange(int(np.prod(x.shape)), dtype=np.int64).reshape(x.shape)


def _gather_at(x, positions: np.ndarray):
    """The elements of `x` at the flat `positions` (the result has their shape)."""
    flat = reshape(x, (-1,))
    picked = index_select(flat, 0, constant_like(positions.reshape(-1), x))
    return reshape(picked, positions.shape)


def _write_at(x, positions: np.ndarray, src, name: str):
    """`x` with `src` (of the positions' shape) written at the flat `positions`."""
    src = as_tensor(src)
    if tuple(src.shape) != positions.shape:
        raise ShapeError(f"{name}: src of shape {src.shape} must have the selected shape "
                         f"{positions.shape}")
    flat = reshape(x, (-1,))
    where_at = constant_like(positions.reshape(-1), x)
    placed = scatter(zeros_like(flat), 0, where_at, reshape(cast(src, x.dtype), (-1,)))
    mask = np.zeros(flat.shape[0], bool)
    mask[positions.reshape(-1)] = True
    return reshape(where(constant_like(mask, x), placed, flat), tuple(x.shape))


def diagonal(input: TensorLike, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes, as the last dim (`offset` above the main one)."""
    x = as_tensor(input)
    _known("diagonal", x)
    if dim1 % x.ndim == dim2 % x.ndim:
        raise ShapeError(f"diagonal: dim1 and dim2 must differ, got {dim1} and {dim2}")
    return _gather_at(x, np.diagonal(_positions(x), offset, dim1, dim2))


def diag_embed(input: TensorLike, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Tensors whose (dim1, dim2) planes have the last dim of `input` on their diagonal."""
    x = as_tensor(input)
    shape = _known("diag_embed", x)
    n = shape[-1] + abs(offset)
    out_shape = list(shape[:-1])
    ndim = x.ndim + 1
    d1, d2 = dim1 % ndim, dim2 % ndim
    if d1 == d2:
        raise ShapeError(f"diag_embed: dim1 and dim2 must differ, got {dim1} and {dim2}")
    for d in sorted((d1, d2)):
        out_shape.insert(d, n)
    zeros = constant_like(np.zeros(out_shape, x.dtype), x)
    positions = np.diagonal(np.arange(int(np.prod(out_shape))).reshape(out_shape), offset, d1,
                            d2)
    return _write_at(zeros, positions, x, "diag_embed")


def diagflat(input: TensorLike, offset: int = 0) -> Tensor:
    """A 2-d tensor with the flattened input on its `offset` diagonal."""
    return diag_embed(flatten(as_tensor(input)), offset)


def select(input: TensorLike, dim: int, index: int) -> Tensor:
    """The slice at `index` of `dim`, that dim removed."""
    x = as_tensor(input)
    key = [slice(None)] * x.ndim
    key[dim] = int(index)
    return _GET(x, tuple(key))


def select_scatter(input: TensorLike, src: TensorLike, dim: int, index: int) -> Tensor:
    """`input` with the slice at `index` of `dim` replaced by `src`."""
    x = as_tensor(input)
    key = [slice(None)] * x.ndim
    key[dim] = int(index)
    return _write_at(x, _positions(_known_like(x, "select_scatter"))[tuple(key)], src,
                     "select_scatter")


def _known_like(x, name):
    return np.empty(_known(name, x), np.int8)


def slice_scatter(input: TensorLike, src: TensorLike, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Tensor:
    """`input` with `input[..., start:end:step, ...]` (along `dim`) replaced by `src`."""
    x = as_tensor(input)
    key = [slice(None)] * x.ndim
    key[dim] = slice(start, end, step)
    return _write_at(x, _positions(_known_like(x, "slice_scatter"))[tuple(key)], src,
                     "slice_scatter")


def diagonal_scatter(input: TensorLike, src: TensorLike, offset: int = 0, dim1: int = 0,
                     dim2: int = 1
                     ) -> Tensor:
    """`input` with its `diagonal(offset, dim1, dim2)` replaced by `src`."""
    x = as_tensor(input)
    positions = np.diagonal(_positions(_known_like(x, "diagonal_scatter")), offset, dim1, dim2)
    return _write_at(x, positions, src, "diagonal_scatter")


def _index_mask(x, dim, idx):
    """A bool tensor shaped for broadcasting against `x`: true at the indices along `dim`."""
    size = x.shape[dim]
    marks = scatter(constant_like(np.zeros(size, np.float32), x), 0, reshape(idx, (-1,)),
                    value=1.0)
    shape = [1] * x.ndim
    shape[dim % x.ndim] = size
    return ne(reshape(marks, tuple(shape)), 0.0)


def index_fill(input: TensorLike, dim: int, index: TensorLike, value: TensorLike) -> Tensor:
    """`input` with the slices at `index` along `dim` set to `value`."""
    x = as_tensor(input)
    return masked_fill(x, _index_mask(x, dim, as_tensor(index)), value)


@accepts_out
@dim_aliases
def index_copy(input: TensorLike, dim: int, index: TensorLike, source: TensorLike) -> Tensor:
    """`input` with the slices at `index` along `dim` replaced by `source`'s slices."""
    x, idx, src = as_tensor(input), as_tensor(index), as_tensor(source)
    dim = dim % x.ndim
    shape = [1] * src.ndim
    shape[dim] = -1
    spread_index = reshape(idx, tuple(shape)) + zeros_like(cast(src, dtypes.int64))
    spread = scatter_add(zeros_like(x), dim, spread_index, cast(src, x.dtype))
    return where(_index_mask(x, dim, idx), spread, x)


def index_put(input: TensorLike, indices: Sequence[TensorLike], values: TensorLike,
              accumulate: bool = False
              ) -> Tensor:
    """`input` with `values` written (or added, with `accumulate`) at the advanced index
    `indices` (a tuple of index tensors)."""
    x = as_tensor(input)
    key = tuple(as_tensor(i) for i in indices)
    positions = constant_like(_positions(_known_like(x, "index_put")), x)
    flat_index = reshape(_GET(positions, key), (-1,))
    v = reshape(cast(as_tensor(values), x.dtype) + zeros_like(_GET(x, key)), (-1,))
    flat = reshape(x, (-1,))
    if accumulate:
        return reshape(scatter_add(flat, 0, flat_index, v), tuple(x.shape))
    keep = ne(scatter(zeros_like(flat), 0, flat_index, value=1.0), 0.0)
    written = scatter(zeros_like(flat), 0, flat_index, v)
    return reshape(where(keep, written, flat), tuple(x.shape))


def masked_scatter(input: TensorLike, mask: TensorLike, source: TensorLike) -> Tensor:
    """`input` with the elements where `mask` is true replaced, in order, by the first
    elements of `source`."""
    x, m, src = as_tensor(input), as_tensor(mask), as_tensor(source)
    if m.dtype.kind != "b":
        raise DTypeError(f"masked_scatter: mask must be bool, got {m.dtype}")
    full = np.broadcast_to(m._value("masked_scatter(mask)"), tuple(x.shape))
    count = int(full.sum())
    if count > int(np.prod(src.shape)):
        raise ShapeError(f"masked_scatter: source has {int(np.prod(src.shape))} elements, "
                         f"the mask selects {count}")
    positions = np.flatnonzero(full)
    taken = reshape(src, (-1,))[:count]
    return _write_at(x, positions, taken, "masked_scatter")


def put(input: TensorLike, index: TensorLike, source: TensorLike,
        accumulate: bool = False) -> Tensor:
    """`input` (seen flat) with `source` written (or added) at the flat `index`."""
    x = as_tensor(input)
    flat = reshape(x, (-1,))
    idx = reshape(as_tensor(index), (-1,))
    n = int(np.prod(x.shape))
    idx = where(idx < 0, idx + n, idx)
    src = reshape(cast(as_tensor(source), x.dtype), (-1,))
    if accumulate:
        return reshape(scatter_add(flat, 0, idx, src), tuple(x.shape))
    keep = ne(scatter(zeros_like(flat), 0, idx, value=1.0), 0.0)
    return reshape(where(keep, scatter(zeros_like(flat), 0, idx, src), flat), tuple(x.shape))


def take(input: TensorLike, index: TensorLike) -> Tensor:
    """Elements of `input` seen flat, at `index` (the result has the index's shape)."""
    x = as_tensor(input)
    idx = as_tensor(index)
    n = int(np.prod(x.shape))
    idx = where(idx < 0, idx + n, idx)
    return reshape(index_select(reshape(x, (-1,)), 0, reshape(idx, (-1,))), tuple(idx.shape))


def rot90(input: TensorLike, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90 degrees `k` times in the plane of `dims` (from the first towards the
    second)."""
    x = as_tensor(input)
    d0, d1 = (d % x.ndim for d in dims)
    if len(dims) != 2 or d0 == d1:
        raise ArgumentError(f"rot90: dims must be two different dims, got {dims}")
    k %= 4
    if k == 0:
        return clone(x)
    if k == 2:
        return x.flip(d0, d1)
    swapped = transpose(x, d0, d1)
    return swapped.flip(d0) if k == 1 else swapped.flip(d1)


def fliplr(input: TensorLike) -> Tensor:
    """Flip dim 1 (left/right)."""
    x = as_tensor(input)
    if x.ndim < 2:
        raise ShapeError(f"fliplr: expects at least 2 dims, got shape {x.shape}")
    return x.flip(1)


def flipud(input: TensorLike) -> Tensor:
    """Flip dim 0 (up/down)."""
    x = as_tensor(input)
    if x.ndim < 1:
        raise ShapeError("flipud: expects at least 1 dim")
    return x.flip(0)


def block_diag(*tensors):
    """A block-diagonal matrix of 0-, 1- or 2-d tensors."""
    blocks = [reshape(t, (1, 1)) if as_tensor(t).ndim == 0 else
              reshape(t, (1, -1)) if as_tensor(t).ndim == 1 else as_tensor(t)
              for t in tensors]
    if any(b.ndim != 2 for b in blocks):
        raise ShapeError("block_diag: expects tensors of at most 2 dims")
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        right = width - left - b.shape[1]
        parts = [constant_like(np.zeros((b.shape[0], left), b.dtype), b)] if left else []
        parts += [b] + ([constant_like(np.zeros((b.shape[0], right), b.dtype), b)]
                        if right else [])
        rows.append(concat(parts, 1) if len(parts) > 1 else b)
        left += b.shape[1]
    return concat(rows, 0)


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-d tensor, as rows."""
    if len(tensors) == 1:
        return as_tensor(tensors[0])
    sizes = [as_tensor(t).shape[0] for t in tensors]
    grids = np.array(list(itertools.product(*[range(n) for n in sizes]))).T
    cols = [index_select(as_tensor(t), 0, constant_like(g, as_tensor(t)))
            for t, g in zip(tensors, grids)]
    return stack(cols, 1)


def combinations(input, r: int = 2, with_replacement: bool = False):
    """The length-`r` combinations of a 1-d tensor's elements, as rows."""
    x = as_tensor(input)
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = np.array(list(pick(range(x.shape[0]), r)), np.int64).reshape(-1, r)
    if rows.size == 0:
        return reshape(x[:0], (0,) if r == 0 else (0, r))
    return stack([index_select(x, 0, constant_like(rows[:, i], x)) for i in range(r)], 1)


def unravel_index(indices, shape):
    """The coordinates of flat `indices` in a tensor of `shape` (a tuple of tensors)."""
    idx = as_tensor(indices)
    if idx.dtype.kind not in "iu":
        raise DTypeError(f"unravel_index: indices must be integers, got {idx.dtype}")
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
    values = idx._value("unravel_index")
    total = int(np.prod(shape))
    if values.size and (values.min() < -total or values.max() >= total):
        raise ShapeError(f"unravel_index: an index is out of range for shape {shape}")
    return tuple(as_tensor(c.astype(np.int64)) for c in np.unravel_index(values % total, shape))


def constant_pad_nd(input, pad, value=0):
    """Constant padding of the last dims (`pad` = (left, right) for the last dim first;
    negative widths crop)."""
    x = as_tensor(input)
    pad = [int(p) for p in pad]
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ShapeError(f"constant_pad_nd: pad {tuple(pad)} needs an even length of at most "
                         f"2 * {x.ndim}")
    for i in range(len(pad) // 2):
        dim = x.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        n = x.shape[dim]
        if left < 0 or right < 0:
            x = narrow(x, dim, max(-left, 0), n - max(-left, 0) - max(-right, 0))
            left, right = max(left, 0), max(right, 0)
        parts = []
        for width in (left, None, right):
            if width is None:
                parts.append(x)
            elif width:
                shape = list(_known("constant_pad_nd", x))
                shape[dim] = width
                parts.append(constant_like(np.full(shape, value, x.dtype), x))
        x = concat(parts, dim) if len(parts) > 1 else x
    return x


def ravel(input: TensorLike) -> Tensor:
    """The tensor flattened to 1-d."""
    return flatten(as_tensor(input))


@accepts_out
def msort(input: TensorLike) -> Tensor:
    """The input sorted along dim 0 (the values)."""
    return sort(as_tensor(input), 0).values


def unsafe_chunk(input: TensorLike, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """`chunk` (PyTorch's unchecked form)."""
    return chunk(input, chunks, dim)


def unsafe_split(input: TensorLike, split_size: int | Sequence[int], dim: int = 0) -> tuple[Tensor,
                 ...]:
    """`split` (PyTorch's unchecked form)."""
    return split(input, split_size, dim)


def unsafe_split_with_sizes(input: TensorLike, split_sizes: Sequence[int] | Tensor, dim: int = 0
                            ) -> tuple[Tensor, ...]:
    """`split_with_sizes` (PyTorch's unchecked form)."""
    return split_with_sizes(input, split_sizes, dim)


__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "column_stack", "dstack", "row_stack",
           "tensor_split", "hsplit", "vsplit", "dsplit", "split_with_sizes", "diagonal",
           "diag_embed", "diagflat", "select", "select_scatter", "slice_scatter",
           "diagonal_scatter", "index_fill", "index_copy", "index_put", "masked_scatter",
           "put", "take", "rot90", "fliplr", "flipud",
           "block_diag", "cartesian_prod", "combinations", "unravel_index",
           "constant_pad_nd", "ravel", "msort", "unsafe_chunk", "unsafe_split",
           "unsafe_split_with_sizes"]
