"""Positions of the nonzero elements: `nonzero`, `argwhere` (and one-argument `where`).

Composed of ops (a running count along each dim gives every element's position, a boolean
mask selects the nonzero ones), so the result's unknown length is decided at run time in a
graph as eagerly."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import dtypes
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out
from .compare import ne
from .convert import as_tensor
from .elementwise import cast, ones_like, sub
from .index import getitem
from .scan import cumsum
from .shape import reshape, stack

if TYPE_CHECKING:
    from ..types import TensorLike

__all__ = ["nonzero", "argwhere"]


@accepts_out(after="input")
def nonzero(input: Tensor, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    """The indices of the nonzero elements of `input`: a (k, ndim) int64 tensor, one row per
    element in row-major order; with `as_tuple=True` one 1-d tensor per dim instead."""
    x = as_tensor(input)
    mask = x if x.dtype.kind == "b" else ne(x, as_tensor(0, x))
    if mask.ndim == 0:
        mask = reshape(mask, (1,))
        if as_tuple:
            return (getitem(sub(cumsum(ones_like(mask, dtypes.int64), 0), 1), mask),)
        empty_row = getitem(reshape(cast(mask, dtypes.int64), (1, 1)), (slice(None), slice(0, 0)))
        return getitem(empty_row, mask)  # (k, 0): a 0-d tensor has no dims to index
    ones = ones_like(mask, dtypes.int64)
    positions = tuple(getitem(sub(cumsum(ones, d), 1), mask) for d in range(mask.ndim))
    return positions if as_tuple else stack(positions, 1)


def argwhere(input: TensorLike) -> Tensor:
    """`nonzero(input)`: the (k, ndim) indices of the nonzero elements."""
    return nonzero(input)
