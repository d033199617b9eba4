"""Shared shape/dtype inference helpers (unknown dims are `None`)."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..dtypes import is_floating
from ..errors import DTypeError, ShapeError
from .registry import Spec
from .validation import check_dims


def fmt(shape) -> str:
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + (
        ",)" if len(shape) == 1 else ")"
    )


def broadcast(op: str, *shapes) -> tuple:
    """The broadcast shape of `shapes`, NumPy rules, `None` for unknown dims."""
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(ndim):
        dims = [s[i - ndim + len(s)] for s in shapes if i - ndim + len(s) >= 0]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ShapeError(
                f"{op}: shapes {' and '.join(fmt(s) for s in shapes)} cannot be broadcast "
                f"together (dim {i - ndim} is {' vs '.join(str(d) for d in sorted(known))})"
            )
        if known:
            out.append(known.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def normalize_dim(op: str, dim: int, ndim: int) -> int:
    if type(dim) is int and 0 <= dim < ndim:  # already canonical: the common case
        return dim
    dim = check_dims(op, dim)  # reliab: an ArgumentError for a non-integer dim
    if not -max(ndim, 1) <= dim < max(ndim, 1):  # a 0-d tensor takes 0 and -1 (PyTorch)
        raise ShapeError(f"{op}: dim {dim} is out of range for a tensor of {ndim} dims")
    return dim % ndim if ndim else 0


def normalize_dims(op: str, dim, ndim: int) -> tuple:
    """`dim` (None, int or sequence) as a sorted tuple of non-negative axes."""
    if type(dim) is tuple and _canonical(dim, ndim):  # e.g. a gradient's own reduction
        return dim
    dim = check_dims(op, dim)  # reliab: an ArgumentError for dim='a', 1.5, ...
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = (dim,)
    axes = sorted({normalize_dim(op, d, ndim) for d in dim})
    return tuple(axes) if ndim else ()  # a 0-d tensor reduced over dim 0: nothing to reduce


def _canonical(dims: tuple, ndim: int) -> bool:
    """`dims` is already sorted, distinct, non-negative Python ints below `ndim`."""
    last = -1
    for d in dims:
        if type(d) is not int or not last < d < ndim:
            return False
        last = d
    return True


def same(spec: Spec) -> tuple:
    return spec.shape, spec.dtype


def elementwise(op: str):
    """infer for an n-ary elementwise op: broadcast shapes, promote dtypes."""

    def infer(*specs: Spec, **attrs: object) -> tuple[tuple[int | None, ...], np.dtype]:
        dtype = specs[0].dtype
        for s in specs[1:]:
            dtype = dtypes.promote(dtype, s.dtype)
        return broadcast(op, *(s.shape for s in specs)), dtype

    return infer


def floating(op: str):
    """infer for a unary op defined on floats only."""

    def infer(x: Spec, **attrs: object) -> tuple[tuple[int | None, ...], np.dtype]:
        if not is_floating(x.dtype):
            raise DTypeError(f"{op}: expects a floating point tensor, got {x.dtype}")
        return x.shape, x.dtype

    return infer


def comparison(op: str):
    base = elementwise(op)

    def infer(*specs: Spec, **attrs):
        shape, _ = base(*specs)
        return shape, dtypes.bool_

    return infer


def known(shape) -> bool:
    return all(d is not None for d in shape)


def numel(shape):
    return int(np.prod(shape)) if known(shape) else None


def numeric(op: str):
    """infer for a unary op on numbers (ints and floats, not bools): same shape and dtype."""

    def infer(x: Spec, **attrs):
        if x.dtype.kind == "b":
            raise DTypeError(f"{op}: not defined for bool tensors")
        return x.shape, x.dtype

    return infer
