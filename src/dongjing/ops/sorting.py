"""Sorting: `argsort` and `topk`'s indices are primitives (no gradient: integer outputs);
`sort` and `topk` return (values, indices) with the values gathered at the indices, so the
gradient flows to the picked elements through `gather`.

Order: ascending sorts are stable; descending sorts keep equal elements in their original
order too, and NaN sorts as the largest value (as PyTorch does).
"""

from __future__ import annotations

from collections import namedtuple

from .. import dtypes
from ..core import infer as inf
from ..core.registry import Spec, binds, define
from ..core.torch_args import dim_aliases
from ..dispatch import apply1
from ..errors import ShapeError
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out
from . import onnx_rules
from .convert import as_tensor
from .scatter import gather

SortResult = namedtuple("sort", ["values", "indices"])
TopkResult = namedtuple("topk", ["values", "indices"])


def _argsort_forward(xp, x, dim, descending=False):
    if x.dtype.kind == "b":
        x = x.astype(xp.int8)
    if not descending:
        return xp.argsort(x, axis=dim, kind="stable")
    # stable descending: sort the reversed array ascending, reverse, map positions back
    n = x.shape[dim]
    order = xp.argsort(xp.flip(x, dim), axis=dim, kind="stable")
    return (n - 1) - xp.flip(order, dim)


def _argsort_infer(x: Spec, dim, descending=False):
    return x.shape, dtypes.int64


_argsort = define("argsort", forward=_argsort_forward, infer=_argsort_infer,
                  onnx=onnx_rules.argsort, public="argsort",
                  methods="argsort")


@binds(_argsort)
def argsort(input, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The indices that sort `input` along `dim` (always a stable sort)."""
    x = as_tensor(input)
    if x.ndim == 0:
        return apply1(_argsort, x.reshape(1), dim=0, descending=descending).reshape(())
    return apply1(_argsort, x, dim=inf.normalize_dim("argsort", dim, x.ndim),
                  descending=bool(descending))


@accepts_out
@dim_aliases
def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False
         ) -> tuple[Tensor, Tensor]:
    """(values, indices) of `input` sorted along `dim`; values carry the gradient."""
    x = as_tensor(input)
    indices = argsort(x, dim, descending)
    if x.ndim == 0:
        return SortResult(x, indices)
    return SortResult(gather(x, dim, indices), indices)


def _topk_forward(xp, x, k, dim, largest=True):
    order = _argsort_forward(xp, x, dim, descending=largest)
    return xp.take(order, xp.arange(k), axis=dim)


def _topk_infer(x: Spec, k, dim, largest=True):
    size = x.shape[dim]
    if size is not None and not 0 <= k <= size:
        raise ShapeError(f"topk: k={k} is out of range for dim {dim} of size {size}")
    return x.shape[:dim] + (k,) + x.shape[dim + 1:], dtypes.int64


_topk = define("topk", forward=_topk_forward, infer=_topk_infer, onnx=onnx_rules.topk,
               public="topk", methods="topk",
               doc="The k largest (or smallest) elements along a dim.")


@binds(_topk)
@accepts_out
@dim_aliases
def topk(input: Tensor, k: int, dim: int | None = None, largest: bool = True,
         sorted: bool = True) -> tuple[Tensor, Tensor]:
    """(values, indices) of the `k` largest (``largest=False``: smallest) elements along `dim`
    (None: the last), in sorted order (``sorted=False`` gives the same order: any order is
    allowed)."""
    x = as_tensor(input)
    if x.ndim == 0:
        x = x.reshape(1)
    dim = inf.normalize_dim("topk", -1 if dim is None else dim, x.ndim)
    size = x.shape[dim]
    if size is not None and not 0 <= int(k) <= size:
        raise ShapeError(f"topk: k={k} is out of range for dim {dim} of size {size}")
    indices = apply1(_topk, x, k=int(k), dim=dim, largest=bool(largest))
    return TopkResult(gather(x, dim, indices), indices)
