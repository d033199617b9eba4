"""Matrix products: matmul (1-d, 2-d, batched, broadcast batch dims); mm and friends composed."""

from __future__ import annotations

from .. import dtypes
from ..autocasting import autocast_policy
from ..core import infer as inf
from ..core.registry import OPS, Onnx, Spec, binds, define
from ..dispatch import apply1, apply2, apply_binary, off_tape
from ..errors import ShapeError
from ..short_paths import declare as _declare_short_path
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out, write_out
from .convert import pair
from .shape import _permute, squeeze, transpose, unsqueeze

_make = Tensor._make

_declare_short_path("linalg.matmul_grad", __name__, "2-d matmul gradient products by NumPy's @ "
                    "on the arrays (dispatch.off_tape), without the permute and matmul dispatches")


def _matmul_infer(a: Spec, b: Spec):
    sa, sb = a.shape, b.shape
    if not sa or not sb:
        raise ShapeError(
            f"matmul: both operands need at least 1 dim; got shapes {inf.fmt(sa)} and "
            f"{inf.fmt(sb)}"
        )
    ka = sa[-1]
    kb = sb[0] if len(sb) == 1 else sb[-2]
    if ka is not None and kb is not None and ka != kb:
        raise ShapeError(
            f"matmul: shapes {inf.fmt(sa)} and {inf.fmt(sb)} don't match: the last dim of the "
            f"first ({ka}) must equal the {'only' if len(sb) == 1 else 'second-to-last'} dim of "
            f"the second ({kb})"
        )
    batch = inf.broadcast("matmul", sa[:-2], sb[:-2]) if len(sa) > 2 or len(sb) > 2 else ()
    rows = (sa[-2],) if len(sa) > 1 else ()
    cols = (sb[-1],) if len(sb) > 1 else ()
    return batch + rows + cols, dtypes.promote(a.dtype, b.dtype)


def _swap_last(x):
    return transpose(x, -1, -2)


def _matmul_grad_a(g, a, b):
    if a.ndim == 2 and b.ndim == 2:  # the common case, without reshaping
        if off_tape(g, b):  # short path: linalg.matmul_grad (without two dispatches)
            return _make(_matmul.forward(g._data, _transposed(b._data)))
        return apply2(_matmul, g, apply1(_permute, b, dims=(1, 0)))
    b2 = b if b.ndim > 1 else unsqueeze(b, -1)
    g2 = _lift(g, a, b)
    ga = matmul(g2, _swap_last(b2))
    return squeeze(ga, -2) if a.ndim == 1 else ga  # the engine sums broadcast batch dims


def _transposed(array):
    """A matrix's transpose, as the permute op computes it (for the off-tape products)."""
    return _permute.forward(array, dims=(1, 0))


def _is_transpose(t) -> bool:
    """Whether `t` was made by transposing a matrix (`w.T`), eagerly or in a graph."""
    producer = t._node if t._node is not None else t.grad_fn
    op = getattr(producer, "op", None)
    return getattr(op, "name", None) == "permute" and tuple(producer.attrs["dims"]) == (1, 0)


def _matmul_grad_b(g, a, b):
    if a.ndim == 2 and b.ndim == 2:
        direct = off_tape(g, a)  # short path: linalg.matmul_grad (without the dispatches)
        if _is_transpose(b):  # x @ w.T (every Linear): the same product as (g.T @ a).T,
            # computed so that w's gradient comes out in C order, the layout of w itself (a
            # transposed gradient makes the optimizer's update of w a strided pass)
            if direct:
                return _make(_transposed(_matmul.forward(_transposed(g._data), a._data)))
            return apply1(_permute, apply2(_matmul, apply1(_permute, g, dims=(1, 0)), a),
                          dims=(1, 0))
        if direct:
            return _make(_matmul.forward(_transposed(a._data), g._data))
        return apply2(_matmul, apply1(_permute, a, dims=(1, 0)), g)
    a2 = a if a.ndim > 1 else unsqueeze(a, 0)
    gb = matmul(_swap_last(a2), _lift(g, a, b))
    return squeeze(gb, -1) if b.ndim == 1 else gb


def _lift(g, a, b):
    """`g` with the dims that 1-d operands dropped put back."""
    if b.ndim == 1:
        g = unsqueeze(g, -1)
    if a.ndim == 1:
        g = unsqueeze(g, -2)
    return g


_matmul = define("matmul", ufunc="matmul", infer=_matmul_infer,
                 grads=(_matmul_grad_a, _matmul_grad_b), grad_name="MmBackward0",
                 onnx=Onnx("MatMul", cast="out"), public="matmul",
                 methods=("matmul", "__matmul__", "__rmatmul__"))


@binds(_matmul)
def matmul(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Matrix product with NumPy/PyTorch semantics (1-d, 2-d, batched, broadcast batch dims)."""
    result = apply_binary(_matmul, input, other, pair)
    return result if out is None else write_out("matmul", result, out)


def cast_to(x: Tensor, dtype) -> Tensor:
    """`x` in `dtype` (itself when `dtype` is None): PyTorch's `out_dtype=` of products."""
    return x if dtype is None else OPS["cast"].binding(x, dtype)  # declared after this module


@autocast_policy("mm")
@accepts_out
def mm(input: Tensor, mat2: Tensor, out_dtype=None) -> Tensor:
    """2-d matrix product (`out_dtype`: both operands cast to it first)."""
    a, b = pair(input, mat2)
    if a.ndim != 2 or b.ndim != 2:
        raise ShapeError(f"mm: expects two 2-d tensors, got shapes {a.shape} and {b.shape}")
    return apply2(_matmul, cast_to(a, out_dtype), cast_to(b, out_dtype))


@autocast_policy("dot")
@accepts_out
def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """Inner product of two 1-d tensors."""
    a, b = pair(input, tensor)
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"dot: expects two 1-d tensors, got shapes {a.shape} and {b.shape}")
    return apply2(_matmul, a, b)
