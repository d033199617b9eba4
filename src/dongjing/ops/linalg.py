"""Matrix products: matmul (1-d, 2-d, batched, broadcast batch dims); mm and friends composed."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .. import infer as inf
from ..dispatch import apply1, apply2
from ..errors import ShapeError
from ..registry import Spec, register
from .broadcast import sum_to_shape
from .convert import pair
from .shape import _permute, squeeze, transpose, unsqueeze


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


def _matmul_vjp(g, inputs, out, needs, attrs):
    a, b = inputs
    if a.ndim == 2 and b.ndim == 2:  # the common case, without reshaping
        return (apply2(_matmul, g, apply1(_permute, b, dims=(1, 0))) if needs[0] else None,
                apply2(_matmul, apply1(_permute, a, dims=(1, 0)), g) if needs[1] else None)
    a2 = a if a.ndim > 1 else unsqueeze(a, 0)
    b2 = b if b.ndim > 1 else unsqueeze(b, -1)
    g2 = g
    if b.ndim == 1:
        g2 = unsqueeze(g2, -1)
    if a.ndim == 1:
        g2 = unsqueeze(g2, -2)
    ga = gb = None
    if needs[0]:
        ga = sum_to_shape(matmul(g2, _swap_last(b2)), a2.shape)
        if a.ndim == 1:
            ga = squeeze(ga, 0)
    if needs[1]:
        gb = sum_to_shape(matmul(_swap_last(a2), g2), b2.shape)
        if b.ndim == 1:
            gb = squeeze(gb, -1)
    return ga, gb


_matmul = register("matmul", forward=np.matmul, infer=_matmul_infer, vjp=_matmul_vjp,
                   kind="opaque", grad_name="MmBackward0", ufunc=np.matmul)


def matmul(a, b):
    """Matrix product with NumPy/PyTorch semantics (1-d, 2-d, batched, broadcast batch dims)."""
    a, b = pair(a, b)
    return apply2(_matmul, a, b)


def mm(a, b):
    """2-d matrix product."""
    a, b = pair(a, b)
    if a.ndim != 2 or b.ndim != 2:
        raise ShapeError(f"mm: expects two 2-d tensors, got shapes {a.shape} and {b.shape}")
    return apply2(_matmul, a, b)


def dot(a, b):
    """Inner product of two 1-d tensors."""
    a, b = pair(a, b)
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"dot: expects two 1-d tensors, got shapes {a.shape} and {b.shape}")
    return apply2(_matmul, a, b)
