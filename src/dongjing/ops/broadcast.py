"""The one helper that reduces a broadcast gradient back to an input's shape."""

from __future__ import annotations

from ..backends import numpy_backend
from ..core.eager_modes import plain as _plain
from ..core.registry import Kind, define
from ..dispatch import apply1, apply2
from ..dtypes import LOW_PRECISION
from ..short_paths import declare as _declare_short_path
from ..tensor import Tensor
from . import onnx_rules
from .reduce import _sum
from .shape import broadcast_to_like

_numpy = numpy_backend.xp
_ndarray = numpy_backend.array_types[0]

_declare_short_path("broadcast.sum_to_shape", __name__, "a broadcast gradient no tape needs "
                    "summed by the sum op's forward without dispatch (plain mode)")


def sum_to_shape(g, shape: tuple):
    """Sum `g` over the dims that broadcasting added or stretched, so it has `shape`.

    Every vjp of a broadcasting op calls this; it is a no-op (returns `g`) when shapes agree.
    An unknown (`None`) input dim is taken as not broadcast.
    """
    gshape = g.shape
    if gshape == shape:
        return g
    reduce_sum = _reduce_sum()

    lead = len(gshape) - len(shape)
    stretched = tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and gshape[lead + i] != 1
    )
    if (_plain.on and not g.requires_grad and g._node is None and type(g._data) is _ndarray
            and g._data.dtype not in LOW_PRECISION):  # 16-bit floats: summed in float32
        # short path: broadcast.sum_to_shape (no profiler event or check is due)
        return _off_tape(g._data, stretched, lead)
    # the dims are canonical (sorted, non-negative), so the op is applied without the
    # public function's argument checks: this runs for every broadcast gradient
    if stretched:
        g = reduce_sum(g, dim=stretched, keepdim=True)
    if lead:
        g = reduce_sum(g, dim=tuple(range(lead)), keepdim=False)
    return g


def _off_tape(data, stretched: tuple, lead: int):
    """The same sums on a NumPy array no tape needs (the backward engine's gradients): the sum
    op's own forward, called without dispatch."""
    forward, make = _sum_forward()
    if stretched:
        data = forward(data, dim=stretched, keepdim=True)
    if lead:
        data = forward(data, dim=tuple(range(lead)), keepdim=False)
    if type(data) is not _ndarray:  # a full reduction's NumPy scalar
        data = _numpy.asarray(data)
    return make(data)


def _sum_forward():
    global _sum_forward

    found = (_sum.forward, Tensor._make)
    _sum_forward = lambda: found  # noqa: E731  (resolved once)
    return found


def _reduce_sum():
    global _reduce_sum

    def reduce_sum(g, dim: tuple, keepdim: bool):
        return apply1(_sum, g, dim=dim, keepdim=keepdim)

    _reduce_sum = lambda: reduce_sum  # noqa: E731  (resolved once)
    return reduce_sum


def _sum_to_like_forward(xp, g, like):
    if g.shape == like.shape:
        return g
    lead = g.ndim - like.ndim
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(like.shape) if d == 1 and g.shape[lead + i] != 1)
    return xp.sum(g, axis=axes, keepdims=True).reshape(like.shape)


def _sum_to_like_infer(g, like):
    return tuple(like.shape), g.dtype


def _sum_to_like_define():
    return define(
        "sum_to_like", forward=_sum_to_like_forward, infer=_sum_to_like_infer, kind=Kind.REDUCE,
        grads=(lambda gg, g, like: _broadcast_back(gg, g), None), grad_name="SumToBackward0",
        onnx=onnx_rules.sum_to_like,
        doc="`g` summed over the dims broadcasting stretched, to the run-time shape of `like`.",
    )


def _broadcast_back(gg, g):
    return broadcast_to_like(gg, g)


_sum_to_like = _sum_to_like_define()


def sum_to_like(g, like):
    """`g` reduced to the shape `like` has when the graph runs (an unknown dim decides then)."""
    return apply2(_sum_to_like, g, like)
