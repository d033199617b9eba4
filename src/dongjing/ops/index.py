"""Indexing and slicing (ints, slices, None, ..., integer arrays, boolean masks) with
scatter-add gradients. Index tensors are op inputs, so a graph may index by a placeholder."""

from __future__ import annotations

import numpy as np

from .. import infer as inf
from ..dispatch import apply, apply1
from ..registry import Spec, register
from ..tensor import Tensor
from .convert import as_tensor


class Slot:
    """Place of the i-th index tensor in a key template."""

    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = i

    def __repr__(self) -> str:
        return f"%{self.i}"

    def __eq__(self, other):
        return isinstance(other, Slot) and other.i == self.i

    def __hash__(self):
        return hash(("slot", self.i))


def parse_key(key) -> tuple[tuple, list]:
    """Split a Python index into a hashable template and the index tensors it uses."""
    if not isinstance(key, tuple):
        key = (key,)
    template, tensors = [], []
    for item in key:
        if isinstance(item, Tensor) or isinstance(item, (list, np.ndarray)):
            t = as_tensor(item)
            if t.dtype.kind not in "biu":
                raise IndexError(
                    f"getitem: index tensors must be integer or bool, got {t.dtype}"
                )
            template.append(Slot(len(tensors)))
            tensors.append(t)
        elif isinstance(item, slice):
            template.append(("slice", _int_or_none(item.start), _int_or_none(item.stop),
                             _int_or_none(item.step)))
        elif item is None or item is Ellipsis:
            template.append(item)
        elif isinstance(item, (bool, np.bool_)):
            raise IndexError("getitem: a Python bool is not a valid index")
        elif isinstance(item, (int, np.integer)):
            template.append(int(item))
        else:
            raise IndexError(f"getitem: unsupported index of type {type(item).__name__}")
    return tuple(template), tensors


def _int_or_none(v):
    if v is None:
        return None
    if hasattr(v, "__index__"):
        return int(v.__index__())
    raise IndexError(f"getitem: slice bounds must be integers, got {type(v).__name__}")


def build_key(template, arrays):
    key = []
    for item in template:
        if type(item) is Slot:
            key.append(arrays[item.i])
        elif type(item) is tuple:
            key.append(slice(item[1], item[2], item[3]))
        else:
            key.append(item)
    return tuple(key)


def _has_arrays(template) -> bool:
    return any(type(item) is Slot for item in template)


def _getitem_forward(x, *arrays, key):
    out = x[build_key(key, arrays)]
    if isinstance(out, np.ndarray) and out.base is not None:
        out = out.copy()  # a result never aliases its input (no view tracking on the tape)
    return out


_UNKNOWN = 1_000_003  # stand-in size of an unknown dim during inference


def _dummy(shape, dtype):
    """A zero-stride array of `shape` (None dims -> a large stand-in) costing no memory."""
    sizes = tuple(_UNKNOWN if d is None else d for d in shape)
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype), sizes, (0,) * len(sizes))


def _getitem_infer(x: Spec, *index: Spec, key):
    arrays = []
    for spec in index:
        if spec.dtype.kind == "b":
            # a mask of k dims consumes k dims and yields one of data-dependent length
            k = len(spec.shape)
            arrays.append(tuple(np.zeros(_UNKNOWN + 1, np.int64) for _ in range(k)))
        else:
            arrays.append(_dummy(spec.shape, np.int64))
    parts = []
    for item in key:
        if type(item) is Slot and isinstance(arrays[item.i], tuple):
            parts.extend(Slot(-1 - j) for j in range(len(arrays[item.i])))
        else:
            parts.append(item)
    flat = []
    for item in parts:
        if type(item) is Slot and item.i < 0:
            flat.append(np.zeros(_UNKNOWN + 1, np.int64))
        elif type(item) is Slot:
            flat.append(arrays[item.i])
        elif type(item) is tuple:
            flat.append(slice(item[1], item[2], item[3]))
        else:
            flat.append(item)
    try:
        out = _dummy(x.shape, x.dtype)[tuple(flat)]
    except IndexError as exc:
        shape = inf.fmt(x.shape)
        raise IndexError(f"getitem: {exc} (indexing a tensor of shape {shape})") from None
    shape = tuple(None if d >= _UNKNOWN - 2 else d for d in np.shape(out))
    return shape, x.dtype


def _getitem_vjp(g, inputs, out, needs, attrs):
    x, *index = inputs
    grad = getitem_grad(g, x, index, attrs["key"]) if needs[0] else None
    return (grad,) + (None,) * len(index)


_getitem = register("getitem", forward=_getitem_forward, infer=_getitem_infer,
                    vjp=_getitem_vjp, kind="opaque", grad_name="IndexBackward0")


def getitem(x, key):
    """`x[key]`: ints, slices, None, Ellipsis, integer arrays and boolean masks."""
    x = as_tensor(x)
    if type(key) is int:  # x[t], the common case in loops: no parsing
        return apply1(_getitem, x, key=(key,))
    template, tensors = parse_key(key)
    return apply(_getitem, x, *tensors, key=template)


def _getitem_grad_forward(g, x, *arrays, key):
    out = np.zeros(x.shape, dtype=g.dtype)
    real = build_key(key, arrays)
    if _has_arrays(key):
        np.add.at(out, real, g)  # repeated indices add up
    else:
        out[real] = g
    return out


def _getitem_grad_vjp(gg, inputs, out, needs, attrs):
    g, x, *index = inputs
    return (apply(_getitem, gg, *index, key=attrs["key"]), None) + (None,) * len(index)


_getitem_grad = register(
    "getitem_grad", forward=_getitem_grad_forward,
    infer=lambda g, x, *index, key: (x.shape, g.dtype), vjp=_getitem_grad_vjp,
    kind="opaque", grad_name="IndexPutBackward0",
)


def getitem_grad(g, x, index, key):
    """Zeros shaped like `x` with `g` scatter-added at `x[key]` (the gradient of getitem)."""
    return apply(_getitem_grad, g, x, *index, key=key)

