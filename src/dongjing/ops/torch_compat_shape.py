"""PyTorch's remaining shape and selection functions, composed from existing ops.

`diag`, `trace`, `broadcast_tensors`, `hstack`, `vstack`, `movedim`/`moveaxis`,
`swapaxes`/`swapdims`, `t`, `cross`, `diff`, `meshgrid`, `repeat_interleave`, `masked_select`
and `unflatten` are built from indexing, reshapes, concatenation and arithmetic, so they
differentiate as those do. `unique` is forward only (no gradient), as in PyTorch, and needs
values (an eager tensor).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .. import dtypes
from ..autocasting import autocast_policy
from ..backends import backend_of
from ..core import infer as inf
from ..core.torch_args import dim_aliases
from ..devices.device import Placement
from ..errors import ArgumentError, DTypeError, GraphError, ShapeError
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out
from ..tensor.transfer import placement_of
from .compare import ne
from .convert import as_tensor, pair
from .elementwise import mul, sub
from .index import getitem
from .layout import narrow
from .reduce import sum
from .scatter import gather, index_select, scatter, scatter_add
from .shape import broadcast_to, concat, permute, reshape, transpose

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..types import TensorLike

__all__ = ["take_along_dim", "diag", "trace", "broadcast_tensors", "hstack", "vstack", "movedim",
           "moveaxis",
           "swapaxes", "swapdims", "t", "cross", "diff", "meshgrid", "repeat_interleave",
           "unique", "masked_select", "unflatten", "index_add"]


def _known(name: str, x: Tensor) -> tuple:
    if not inf.known(x.shape):
        raise ShapeError(f"{name}: needs a known shape, got {inf.fmt(x.shape)}")
    return tuple(x.shape)


def _on(like: Tensor) -> Placement:
    """Where the index arrays for `like` are made: its backend and device (the host's default
    backend when `like` is symbolic, since graph constants live there)."""
    return placement_of(like)


# --- diagonals --------------------------------------------------------------------------------
@accepts_out
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-d `input` as the `diagonal`-th diagonal of a square matrix (zeros elsewhere), or the
    `diagonal`-th diagonal of a 2-d `input` as a 1-d tensor (0: main, > 0 above, < 0 below)."""
    x = as_tensor(input)
    d = int(diagonal)
    shape = _known("diag", x)
    if x.ndim == 1:
        k = shape[0]
        n = k + abs(d)
        at = _on(x)
        rows = at.call("arange", k, dtype=dtypes.int64) + max(-d, 0)
        cols = at.call("arange", k, dtype=dtypes.int64) + max(d, 0)
        flat = Tensor._make(at.call("zeros", n * n, dtype=x.dtype))
        return reshape(scatter(flat, 0, Tensor._make(rows * n + cols), x), (n, n))
    if x.ndim == 2:
        r, c = shape
        length = max(0, min(r, c - d) if d >= 0 else min(r + d, c))
        at = _on(x)
        rows = at.call("arange", length, dtype=dtypes.int64) + max(-d, 0)
        cols = at.call("arange", length, dtype=dtypes.int64) + max(d, 0)
        return getitem(x, (Tensor._make(rows), Tensor._make(cols)))
    raise ShapeError(f"diag: expects a 1-d or 2-d tensor, got shape {inf.fmt(x.shape)}")


@autocast_policy("trace")
def trace(input: TensorLike) -> Tensor:
    """The sum of the main diagonal of a 2-d tensor (integers sum to int64)."""
    x = as_tensor(input)
    if x.ndim != 2:
        raise ShapeError(f"trace: expects a 2-d tensor, got shape {inf.fmt(x.shape)}")
    return sum(diag(x))


# --- broadcasting and stacking ------------------------------------------------------------------
def _tensor_list(name: str, tensors) -> list:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    if not tensors:
        raise ShapeError(f"{name}: expects at least one tensor")
    return [as_tensor(t) for t in tensors]


def broadcast_tensors(*tensors) -> tuple:
    """The tensors broadcast to their common shape (NumPy rules)."""
    xs = _tensor_list("broadcast_tensors", tensors)
    shape = inf.broadcast("broadcast_tensors", *(x.shape for x in xs))
    if not inf.known(shape):
        raise ShapeError(f"broadcast_tensors: needs known shapes, got {inf.fmt(shape)}")
    return tuple(x if tuple(x.shape) == shape else broadcast_to(x, shape) for x in xs)


def _atleast(x: Tensor, ndim: int) -> Tensor:
    """`x` with leading 1s added up to `ndim` dims (0-d -> (1,) or (1, 1); (n,) -> (1, n))."""
    if x.ndim >= ndim:
        return x
    return reshape(x, (1,) * (ndim - x.ndim) + tuple(x.shape))


@accepts_out
def hstack(tensors) -> Tensor:
    """Tensors joined column-wise: along dim 0 for 1-d tensors, else along dim 1."""
    xs = [_atleast(x, 1) for x in _tensor_list("hstack", (tensors,))]
    return concat(xs, 0 if xs[0].ndim == 1 else 1)


@accepts_out
def vstack(tensors) -> Tensor:
    """Tensors joined row-wise: 0-d and 1-d ones become rows (1, n) first, then along dim 0."""
    return concat([_atleast(x, 2) for x in _tensor_list("vstack", (tensors,))], 0)


# --- moving dims --------------------------------------------------------------------------------
def _dims(name: str, what: str, dims, ndim: int) -> list:
    seq = [dims] if isinstance(dims, int) else list(dims)
    out = [inf.normalize_dim(name, d, ndim) for d in seq]
    if len(set(out)) != len(out):
        raise ShapeError(f"{name}: repeated dim in {what} {tuple(seq)}")
    return out


def movedim(input: TensorLike, source: int | Sequence[int],
            destination: int | Sequence[int]) -> Tensor:
    """`input` with the dims `source` (an int or a sequence) moved to `destination`; the other
    dims keep their order."""
    x = as_tensor(input)
    src = _dims("movedim", "source", source, x.ndim)
    dst = _dims("movedim", "destination", destination, x.ndim)
    if len(src) != len(dst):
        raise ShapeError(f"movedim: source {tuple(src)} and destination {tuple(dst)} must have "
                         "the same number of dims")
    order = [None] * x.ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(x.ndim) if d not in src)
    order = [next(rest) if o is None else o for o in order]
    return permute(x, tuple(order)) if order != list(range(x.ndim)) else x


moveaxis = movedim


def swapaxes(input: TensorLike, axis0: int, axis1: int) -> Tensor:
    """`input` with dims `axis0` and `axis1` exchanged (an alias of `transpose`)."""
    return transpose(as_tensor(input), axis0, axis1)


def swapdims(input: TensorLike, dim0: int, dim1: int) -> Tensor:
    """`input` with dims `dim0` and `dim1` exchanged (an alias of `transpose`)."""
    return transpose(as_tensor(input), dim0, dim1)


def t(input):
    """The transpose of a tensor of at most 2 dims (0-d and 1-d come back as they are)."""
    return as_tensor(input).t()


def unflatten(input: TensorLike, dim: int, sizes: Sequence[int]) -> Tensor:
    """`input` with dim `dim` split into `sizes` (one entry may be -1, inferred)."""
    x = as_tensor(input)
    shape = _known("unflatten", x)
    dim = inf.normalize_dim("unflatten", dim, x.ndim)
    sizes = [int(s) for s in sizes]
    if not sizes:
        raise ShapeError("unflatten: sizes must not be empty")
    free = [i for i, s in enumerate(sizes) if s == -1]
    if len(free) > 1 or any(s < -1 for s in sizes):
        raise ShapeError(f"unflatten: sizes {tuple(sizes)} may hold one -1 and no other negative")
    known = math.prod(s for s in sizes if s != -1)
    if free:
        if known == 0 or shape[dim] % known:
            raise ShapeError(f"unflatten: sizes {tuple(sizes)} do not divide dim {dim} of size "
                             f"{shape[dim]}")
        sizes[free[0]] = shape[dim] // known
    elif known != shape[dim]:
        raise ShapeError(f"unflatten: sizes {tuple(sizes)} multiply to {known}, but dim {dim} "
                         f"has size {shape[dim]}")
    return reshape(x, shape[:dim] + tuple(sizes) + shape[dim + 1:])


# --- cross, diff ------------------------------------------------------------------------------
@autocast_policy("cross")
@accepts_out
@dim_aliases
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The cross product of 3-vectors along `dim` (broadcast); without `dim`, the first dim of
    size 3, as `torch.cross` (`torch.linalg.cross` defaults to the last)."""
    a, b = pair(input, other)
    a, b = broadcast_tensors(a, b)
    shape = tuple(a.shape)
    if dim is None:
        found = [i for i, s in enumerate(shape) if s == 3]
        if not found:
            raise ShapeError(f"cross: no dim of size 3 in shape {inf.fmt(shape)}")
        dim = found[0]
    dim = inf.normalize_dim("cross", dim, len(shape))
    if shape[dim] != 3:
        raise ShapeError(f"cross: dim {dim} must have size 3, got shape {inf.fmt(shape)}")
    a0, a1, a2 = (narrow(a, dim, i, 1) for i in range(3))
    b0, b1, b2 = (narrow(b, dim, i, 1) for i in range(3))
    return concat([sub(mul(a1, b2), mul(a2, b1)), sub(mul(a2, b0), mul(a0, b2)),
                   sub(mul(a0, b1), mul(a1, b0))], dim)


def diff(input: TensorLike, n: int = 1, dim: int = -1, prepend: TensorLike | None = None,
         append: TensorLike | None = None) -> Tensor:
    """The `n`-th forward difference along `dim` (bool tensors: `!=`), after joining
    `prepend` and `append` to `input` along `dim`."""
    x = as_tensor(input)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ShapeError(f"diff: n must be a non-negative int, got {n!r}")
    if x.ndim == 0:
        raise ShapeError("diff: expects a tensor of at least 1 dim, got a 0-d tensor")
    dim = inf.normalize_dim("diff", dim, x.ndim)
    parts = [as_tensor(p, x) for p in (prepend,) if p is not None] + [x] + \
        [as_tensor(p, x) for p in (append,) if p is not None]
    for p in parts:
        if p.ndim != x.ndim:
            raise ShapeError(f"diff: prepend/append must have {x.ndim} dims like the input, got "
                             f"shape {inf.fmt(p.shape)}")
    if len(parts) > 1:
        x = concat(parts, dim)
    step = ne if x.dtype.kind == "b" else sub
    for _ in range(n):
        size = _known("diff", x)[dim]
        if size == 0:
            break
        x = step(narrow(x, dim, 1, size - 1), narrow(x, dim, 0, size - 1))
    return x


# --- grids, repeats ---------------------------------------------------------------------------
def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids of 0-d/1-d tensors of one dtype: ``indexing="ij"`` (the default, as
    PyTorch's) gives shape (len(t0), len(t1), ...), ``"xy"`` swaps the first two dims."""
    xs = _tensor_list("meshgrid", tensors)
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ShapeError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for x in xs:
        if x.ndim > 1:
            raise ShapeError(f"meshgrid: expects 0-d or 1-d tensors, got shape "
                             f"{inf.fmt(x.shape)}")
        if x.dtype != xs[0].dtype:
            raise DTypeError(f"meshgrid: expects tensors of one dtype, got {xs[0].dtype} and "
                             f"{x.dtype}")
    sizes = tuple(_known("meshgrid", x)[0] if x.ndim else 1 for x in xs)
    grids = []
    for i, x in enumerate(xs):
        view = (1,) * i + (sizes[i],) + (1,) * (len(xs) - i - 1)
        grids.append(broadcast_to(reshape(x, view), sizes))
    if indexing == "xy" and len(xs) > 1:
        grids = [transpose(g, 0, 1) for g in grids]
    return tuple(grids)


def _repeat_counts(repeats, size: int) -> list:
    """The `size` repeat counts as Python ints: the output's size depends on them, so they are
    host values, like shapes."""
    if isinstance(repeats, Tensor):
        counts = repeats._value("repeat_interleave(repeats)")
        if counts.dtype.kind not in "iu":
            raise DTypeError(f"repeat_interleave: repeats must be integers, got {counts.dtype}")
        if counts.ndim > 1 or counts.size not in (1, size):
            raise ShapeError(f"repeat_interleave: repeats of shape {tuple(counts.shape)} must "
                             f"be one count or {size} counts")
        counts = counts.reshape(-1).tolist()
        counts = counts * size if len(counts) == 1 else counts
    elif isinstance(repeats, int) and not isinstance(repeats, bool):
        counts = [repeats] * size
    else:
        raise DTypeError(f"repeat_interleave: repeats must be an int or an integer tensor, got "
                         f"{type(repeats).__name__}")
    if any(c < 0 for c in counts):
        raise ShapeError("repeat_interleave: repeats must be non-negative")
    return counts


def _repeated_indices(size: int, counts: list, like: Tensor) -> Tensor:
    """``[0]*counts[0] + [1]*counts[1] + ...`` as an int64 tensor on `like`'s device."""
    at = _on(like)
    return Tensor._make(at.call("repeat", at.call("arange", size, dtype=dtypes.int64),
                                   counts))


def repeat_interleave(input: TensorLike | None = None, repeats: TensorLike | None = None,
                      dim: int | None = None, *, output_size: int | None = None) -> Tensor:
    """Each element (slice along `dim`; the flattened tensor when `dim` is None) repeated
    `repeats` times (an int, or one count per element). With only a tensor of counts,
    ``repeat_interleave(counts)`` or ``repeat_interleave(repeats=counts)`` (PyTorch's
    one-argument overload) gives each index repeated that many times."""
    if input is None or repeats is None:
        if input is None and repeats is None:
            raise ArgumentError("repeat_interleave: expects input and repeats, or a tensor of "
                                "counts (repeats=)")
        if dim is not None:
            raise ArgumentError("repeat_interleave: dim= needs both input and repeats")
        counts = as_tensor(repeats if input is None else input)
        if counts.ndim != 1:
            raise ShapeError(f"repeat_interleave: counts must be 1-d, got shape "
                             f"{inf.fmt(counts.shape)}")
        size = counts.shape[0]
        return _checked_size(_repeated_indices(size, _repeat_counts(counts, size), counts),
                             output_size)
    x = as_tensor(input)
    if dim is None:
        x, dim = reshape(x, (-1,)), 0
    dim = inf.normalize_dim("repeat_interleave", dim, x.ndim)
    size = _known("repeat_interleave", x)[dim] if x.ndim else 1
    if x.ndim == 0:
        x, dim = reshape(x, (1,)), 0
    picked = index_select(x, dim, _repeated_indices(size, _repeat_counts(repeats, size), x))
    return _checked_size(picked, output_size, dim)


def _checked_size(out: Tensor, output_size, dim: int = 0) -> Tensor:
    if output_size is not None and out.shape[dim] != output_size:
        raise ShapeError(f"repeat_interleave: output_size={output_size} but the repeats give "
                         f"{out.shape[dim]}")
    return out


# --- selections -------------------------------------------------------------------------------
@accepts_out
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """The values of `input` at `indices` along `dim` (the two broadcast in the other dims);
    with `dim` None, of the flattened `input` at the flattened `indices`."""
    x, index = as_tensor(input), as_tensor(indices)
    if index.dtype.kind not in "iu":
        raise DTypeError(f"take_along_dim: indices must be an integer tensor, got {index.dtype}")
    if dim is None:
        return gather(reshape(x, (-1,)), 0, reshape(index, (-1,)))
    if x.ndim != index.ndim:
        raise ShapeError(f"take_along_dim: input and indices need the same number of dims, got "
                         f"shapes {inf.fmt(x.shape)} and {inf.fmt(index.shape)}")
    dim = inf.normalize_dim("take_along_dim", dim, x.ndim)
    xs, js = _known("take_along_dim", x), _known("take_along_dim", index)
    others = inf.broadcast("take_along_dim", xs[:dim] + (1,) + xs[dim + 1:],
                           js[:dim] + (1,) + js[dim + 1:])
    x = broadcast_to(x, others[:dim] + (xs[dim],) + others[dim + 1:])
    index = broadcast_to(index, others[:dim] + (js[dim],) + others[dim + 1:])
    return gather(x, dim, index)



@accepts_out
def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of `input` where the bool `mask` is true (both broadcast), as a 1-d tensor."""
    x, mask = as_tensor(input), as_tensor(mask)
    if mask.dtype.kind != "b":
        raise DTypeError(f"masked_select: mask must be a bool tensor, got {mask.dtype}")
    x, mask = broadcast_tensors(x, mask)
    return getitem(x, mask)


@accepts_out
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """A copy of `input` with ``alpha * source`` added at the 1-d integer `index` along `dim`
    (``out[index[i]] += alpha * source[i]`` for dim 0; repeated indices add up)."""
    x, index, src = as_tensor(input), as_tensor(index), as_tensor(source)
    if index.dtype.kind not in "iu" or index.ndim > 1:
        raise DTypeError(f"index_add: index must be a 1-d integer tensor, got {index.dtype} of "
                         f"shape {inf.fmt(index.shape)}")
    if src.dtype != x.dtype:
        raise DTypeError(f"index_add: source must have the input's dtype {x.dtype}, got "
                         f"{src.dtype}")
    if x.ndim == 0:
        raise ShapeError("index_add: expects a tensor of at least 1 dim, got a 0-d tensor")
    dim = inf.normalize_dim("index_add", dim, x.ndim)
    shape, src_shape = _known("index_add", x), _known("index_add", src)
    want = shape[:dim] + (_known("index_add", index)[0] if index.ndim else 1,) + shape[dim + 1:]
    if src_shape != want:
        raise ShapeError(f"index_add: source of shape {inf.fmt(src_shape)} must have shape "
                         f"{inf.fmt(want)} (the input's, with dim {dim} the index's length)")
    if index._node is None and index._data.size:
        low, high = int(index._data.min()), int(index._data.max())
        if low < 0 or high >= shape[dim]:
            raise ShapeError(f"index_add: index out of range for dim {dim} of size "
                             f"{shape[dim]} (indices span {low}..{high})")
    if not dtypes.is_scalar_number(alpha):
        raise DTypeError(f"index_add: alpha must be a number, got {type(alpha).__name__}")
    if alpha != 1:
        src = mul(src, alpha)
    view = (1,) * dim + (want[dim],) + (1,) * (x.ndim - dim - 1)
    return scatter_add(x, dim, broadcast_to(reshape(index, view), src_shape), src)


def unique(input: TensorLike, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim: int | None = None) -> Tensor | tuple[Tensor, ...]:
    """The distinct elements of `input` (of the flattened tensor, or the distinct slices along
    `dim`), in ascending order (also for ``sorted=False``, where PyTorch leaves the order
    unspecified); optionally the inverse indices (int64) and the counts (int64). Not
    differentiable, as in PyTorch; needs an eager tensor (its output size depends on values)."""
    x = as_tensor(input)
    if x._node is not None:
        raise GraphError("unique: the output size depends on the values, so it has no static "
                         "graph form; compute it eagerly")
    data = x._data
    if dim is not None:
        dim = inf.normalize_dim("unique", dim, x.ndim)
    xp = backend_of(data).xp
    values, inverse, counts = xp.unique(data, return_inverse=True, return_counts=True, axis=dim,
                                        equal_nan=False)
    if dim is None:
        inverse = inverse.reshape(data.shape)
    out = [Tensor._make(xp.ascontiguousarray(values))]
    if return_inverse:
        out.append(Tensor._make(inverse.reshape(-1 if dim is not None else data.shape)
                                .astype(dtypes.int64)))
    if return_counts:
        out.append(Tensor._make(counts.astype(dtypes.int64)))
    return out[0] if len(out) == 1 else tuple(out)
