"""Rearranging elements: `roll`, `flip`, `tril`/`triu` (primitives whose gradient is the same
rearrangement of the gradient), and the compositions `repeat`, `tile`, `chunk`, `split`,
`narrow`, `unbind` (slicing), `bmm` and `outer` (products)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..autocasting import autocast_policy
from ..core import infer as inf
from ..core.registry import Spec, binds, define
from ..dispatch import apply1
from ..errors import ShapeError
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out
from . import onnx_rules
from .convert import as_tensor
from .elementwise import mul
from .index import getitem
from .linalg import cast_to, matmul
from .shape import expand, reshape, unsqueeze

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..core.registry import Op
    from ..tensor import Tensor
    from ..types import TensorLike


def _as_tuple(values) -> tuple[int, ...]:
    if len(values) == 1 and isinstance(values[0], (tuple, list)):
        values = values[0]
    return tuple(int(v) for v in values)


# --- roll, flip ---------------------------------------------------------------------------------
def _roll_forward(xp, x, shifts, dims):
    return xp.roll(x, shifts, axis=dims)


_roll = define("roll", forward=_roll_forward, infer=lambda x, shifts, dims: inf.same(x),
               grads=(lambda g, x, shifts, dims: apply1(
                   _roll, g, shifts=tuple(-s for s in shifts) if isinstance(shifts, tuple)
                   else -shifts, dims=dims),),
               onnx=None, onnx_reason="exported as Slice + Concat, not yet written",
               public="roll", methods="roll")


@binds(_roll)
def roll(input: TensorLike, shifts: int | Sequence[int],
         dims: int | Sequence[int] | None = None) -> Tensor:
    """Elements shifted by `shifts` along `dims` (cyclically); no `dims`: over the flat tensor."""
    x = as_tensor(input)
    if dims is None:
        if not isinstance(shifts, int):
            raise ShapeError("roll: without dims, shifts must be one int")
        return apply1(_roll, x, shifts=int(shifts), dims=None)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(int(s) for s in shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise ShapeError(f"roll: {len(shifts)} shifts for {len(dims)} dims")
    dims = tuple(inf.normalize_dim("roll", d, x.ndim) for d in dims)
    return apply1(_roll, x, shifts=shifts, dims=dims)


_flip = define("flip", forward=lambda xp, x, dims: xp.flip(x, dims).copy(),
               infer=lambda x, dims: inf.same(x),
               grads=(lambda g, x, dims: apply1(_flip, g, dims=dims),),
               onnx=None, onnx_reason="exported as a negative-step Slice, not yet written",
               public="flip", methods="flip")


@binds(_flip)
def flip(input: Tensor, dims) -> Tensor:
    """`input` with the order of elements reversed along `dims` (an int or a tuple)."""
    x = as_tensor(input)
    dims = _as_tuple((dims,))
    return apply1(_flip, x, dims=tuple(sorted({inf.normalize_dim("flip", d, x.ndim)
                                               for d in dims})))


# --- tril, triu ---------------------------------------------------------------------------------
def _triangle(name: str) -> tuple[Op, Callable[..., Tensor]]:
    def infer(x: Spec, diagonal=0):
        if len(x.shape) < 2:
            raise ShapeError(f"{name}: needs at least 2 dims, got shape {inf.fmt(x.shape)}")
        return inf.same(x)

    op = define(name, forward=lambda xp, x, diagonal=0: getattr(xp, name)(x, diagonal),
                infer=infer, grads=(lambda g, x, diagonal=0: apply1(op, g, diagonal=diagonal),),
                onnx=onnx_rules.triangle(int(name == "triu")), public=name, methods=name)

    def fn(input: Tensor, diagonal: int = 0) -> Tensor:
        x = as_tensor(input)
        infer(Spec(x.shape, x.dtype))
        return apply1(op, x, diagonal=int(diagonal))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"The {'lower' if name == 'tril' else 'upper'} triangle of the last two dims "
                  f"(offset by `diagonal`); the rest zero.")
    return op, binds(op)(accepts_out(fn))


_tril, tril = _triangle("tril")
_triu, triu = _triangle("triu")


# --- repeat, tile -------------------------------------------------------------------------------
def repeat(input: Tensor, *repeats: int | Sequence[int]) -> Tensor:
    """PyTorch's `Tensor.repeat`: `input` tiled `repeats[i]` times along dim i (new leading dims
    when there are more repeats than dims). Composed: expand, then reshape."""
    x = as_tensor(input)
    sizes = _as_tuple(repeats)
    if len(sizes) < x.ndim:
        raise ShapeError(f"repeat: {len(sizes)} repeat counts for a tensor of {x.ndim} dims")
    if any(s < 0 for s in sizes):
        raise ShapeError(f"repeat: repeat counts must be >= 0, got {sizes}")
    shape = (1,) * (len(sizes) - x.ndim) + tuple(x.shape)
    if not inf.known(shape):
        raise ShapeError(f"repeat: needs a known shape, got {inf.fmt(shape)}")
    x = reshape(x, shape)
    for i in range(len(shape)):
        x = unsqueeze(x, 2 * i)  # (1, s0, 1, s1, ...)
    big = tuple(v for s, n in zip(shape, sizes) for v in (n, s))
    return reshape(expand(x, big), tuple(s * n for s, n in zip(shape, sizes)))


def tile(input: Tensor, dims) -> Tensor:
    """`input` repeated `dims[i]` times along dim i; a short `dims` is padded with leading 1s."""
    x = as_tensor(input)
    dims = _as_tuple((dims,))
    return repeat(x, *((1,) * (x.ndim - len(dims)) + dims))


# --- chunk, split, narrow, unbind ---------------------------------------------------------------
def _dim_size(name, x, dim):
    dim = inf.normalize_dim(name, dim, x.ndim)
    size = x.shape[dim]
    if size is None:
        raise ShapeError(f"{name}: dim {dim} has an unknown size; it must be known to split")
    return dim, size


def _slice(x, dim, start, stop):
    return getitem(x, (slice(None),) * dim + (slice(start, stop),))


def split(tensor, split_size_or_sections, dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of `tensor` along `dim`: of `split_size_or_sections` elements each (the last may be
    smaller), or of the listed sizes (which must add up to the dim's size)."""
    x = as_tensor(tensor)
    dim, size = _dim_size("split", x, dim)
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0:
            raise ShapeError(f"split: split size must be positive, got {step}")
        sizes = [min(step, size - s) for s in range(0, size, step)] or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != size:
            raise ShapeError(f"split: sizes {sizes} add up to {sum(sizes)}, but dim {dim} has "
                             f"size {size}")
    pieces, start = [], 0
    for n in sizes:
        pieces.append(_slice(x, dim, start, start + n))
        start += n
    return tuple(pieces)


def chunk(input: TensorLike, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """`input` split into `chunks` pieces of ceil(size / chunks) (fewer when they run out)."""
    x = as_tensor(input)
    if chunks <= 0:
        raise ShapeError(f"chunk: chunks must be positive, got {chunks}")
    _, size = _dim_size("chunk", x, dim)
    return split(x, max(-(-size // chunks), 1), dim)


def narrow(input, dim: int, start: int, length: int) -> Tensor:
    """The `length` elements of `input` from `start` along `dim`."""
    x = as_tensor(input)
    dim, size = _dim_size("narrow", x, dim)
    start = int(start) + size if int(start) < 0 else int(start)
    if not (0 <= start <= size and 0 <= length and start + length <= size):
        raise ShapeError(f"narrow: start {start} and length {length} are out of range for dim "
                         f"{dim} of size {size}")
    return _slice(x, dim, start, start + int(length))


def unbind(input: TensorLike, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices of `input` along `dim`, with that dim removed."""
    x = as_tensor(input)
    dim, size = _dim_size("unbind", x, dim)
    return tuple(getitem(x, (slice(None),) * dim + (i,)) for i in range(size))


# --- products -----------------------------------------------------------------------------------
@autocast_policy("bmm")
@accepts_out
def bmm(input: Tensor, mat2: Tensor, out_dtype=None) -> Tensor:
    """Batched matrix product of two 3-d tensors (b, n, m) @ (b, m, p) (`out_dtype`: both cast
    to it first)."""
    a, b = cast_to(as_tensor(input), out_dtype), cast_to(as_tensor(mat2), out_dtype)
    if a.ndim != 3 or b.ndim != 3:
        raise ShapeError(f"bmm: expects two 3-d tensors, got shapes {inf.fmt(a.shape)} and "
                         f"{inf.fmt(b.shape)}")
    if a.shape[0] is not None and b.shape[0] is not None and a.shape[0] != b.shape[0]:
        raise ShapeError(f"bmm: batch sizes differ: {a.shape[0]} and {b.shape[0]}")
    return matmul(a, b)


@accepts_out
def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product of two 1-d tensors (n,) and (m,): an (n, m) tensor."""
    a, b = as_tensor(input), as_tensor(vec2)
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"outer: expects two 1-d tensors, got shapes {inf.fmt(a.shape)} and "
                         f"{inf.fmt(b.shape)}")
    return mul(unsqueeze(a, 1), unsqueeze(b, 0))
