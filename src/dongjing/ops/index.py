"""Indexing and slicing (ints, slices, None, ..., integer arrays, boolean masks) with
scatter-add gradients. Index tensors are op inputs, so a graph may index by a placeholder."""

from __future__ import annotations

import numbers

from ..autograd.views import mark_view
from ..backends import is_array
from ..core import infer as inf
from ..core.registry import OPS, Spec, define
from ..dispatch import apply, apply1
from ..errors import IndexOutOfRangeError
from ..tensor import Tensor
from ..tensor.transfer import constant_like
from . import onnx_graph_rules
from .convert import as_tensor
from .key_slot import Slot


def parse_key(key) -> tuple[tuple, list]:
    """Split a Python index into a hashable template and the index tensors it uses."""
    if not isinstance(key, tuple):
        key = (key,)
    template, tensors = [], []
    for item in key:
        if isinstance(item, range):  # a sequence of positions, as a list of them
            item = as_tensor(list(item)) if len(item) else as_tensor([0])[:0]
        if isinstance(item, (Tensor, list)) or is_array(item):
            t = as_tensor(item)
            if t.dtype.kind not in "biu":
                raise IndexOutOfRangeError(
                    f"getitem: index tensors must be integer or bool, got {t.dtype}"
                )
            template.append(Slot(len(tensors)))
            tensors.append(t)
        elif isinstance(item, slice):
            template.append(("slice", _int_or_none(item.start), _int_or_none(item.stop),
                             _int_or_none(item.step)))
        elif item is None or item is Ellipsis:
            template.append(item)
        elif isinstance(item, bool) or getattr(getattr(item, "dtype", None), "kind", "") == "b":
            raise IndexOutOfRangeError("getitem: a Python bool is not a valid index")
        elif isinstance(item, numbers.Integral):
            template.append(int(item))
        else:
            raise IndexOutOfRangeError(f"getitem: unsupported index of type {type(item).__name__}")
    return tuple(template), tensors


def _int_or_none(v):
    if v is None:
        return None
    if hasattr(v, "__index__"):
        return int(v.__index__())
    raise IndexOutOfRangeError(f"getitem: slice bounds must be integers, got {type(v).__name__}")


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


def _getitem_forward(xp, x, *arrays, key):
    if not arrays and Ellipsis not in key:
        # basic indexing is a view of `x`, as in PyTorch; the trailing Ellipsis keeps an
        # all-int key a 0-d view instead of a NumPy scalar copy
        return x[build_key(key, arrays) + (Ellipsis,)]
    return x[build_key(key, arrays)]


def _slice_length(item: tuple, size):
    if item[3] == 0:
        raise IndexOutOfRangeError("getitem: slice step cannot be zero")
    if size is None:
        return None  # unknown stays unknown: the length is decided by the fed array
    return len(range(*slice(item[1], item[2], item[3]).indices(size)))


def _getitem_infer(x: Spec, *index: Spec, key):
    """The result shape of `x[key]` by NumPy's rules, computed on the shape symbols.

    Unknown (None) dims stay unknown wherever the result depends on them; a boolean mask
    yields one dim of data-dependent length (None).
    """
    where = f"(indexing a tensor of shape {inf.fmt(x.shape)})"
    advanced = any(type(item) is Slot for item in key)

    def consumed(item):
        if item is None or item is Ellipsis:
            return 0
        if type(item) is Slot and index[item.i].dtype.kind == "b":
            return max(len(index[item.i].shape), 1)
        return 1

    used = sum(consumed(item) for item in key)
    if used > len(x.shape):
        raise IndexOutOfRangeError(f"getitem: too many indices ({used}) {where}")
    if sum(item is Ellipsis for item in key) > 1:
        raise IndexOutOfRangeError(f"getitem: an index can only have one Ellipsis {where}")
    items = []
    for item in key:
        items.extend([slice(None)] * (len(x.shape) - used) if item is Ellipsis else [item])
    items.extend([slice(None)] * (len(x.shape) - used) if Ellipsis not in key else [])
    out: list = []
    fancy: list = []  # shapes of the advanced indices
    fancy_at: list = []  # their positions in `items`
    dim = 0
    for pos, item in enumerate(items):
        if item is None:
            out.append(1)
        elif type(item) is slice:
            out.append(x.shape[dim])
            dim += 1
        elif type(item) is tuple:
            out.append(_slice_length(item, x.shape[dim]))
            dim += 1
        elif type(item) is int:
            size = x.shape[dim]
            if size is not None and not -size <= item < size:
                raise IndexOutOfRangeError(
                    f"getitem: index {item} is out of bounds for dim {dim} of size {size} {where}"
                )
            if advanced:
                fancy.append(())
                fancy_at.append((pos, len(out)))
            dim += 1
        else:  # an index tensor
            spec = index[item.i]
            if spec.dtype.kind == "b":
                k = max(len(spec.shape), 1)
                for j, (m, d) in enumerate(zip(spec.shape, x.shape[dim:dim + k])):
                    if m is not None and d is not None and m != d:
                        raise IndexOutOfRangeError(
                            f"getitem: a boolean mask of shape {inf.fmt(spec.shape)} does not "
                            f"match dim {dim + j} of size {d} {where}"
                        )
                fancy.append((None,))
                dim += k
            else:
                fancy.append(tuple(spec.shape))
                dim += 1
            fancy_at.append((pos, len(out)))
    if fancy:
        shape = inf.broadcast("getitem", *fancy)
        positions = [p for p, _ in fancy_at]
        adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
        at = fancy_at[0][1] if adjacent else 0
        out[at:at] = shape
    return tuple(out), x.dtype


def _getitem_vjp(g, inputs, out, needs, attrs):
    x, *index = inputs
    grad = getitem_grad(g, x, index, attrs["key"]) if needs[0] else None
    return (grad,) + (None,) * len(index)


_getitem = define("getitem", forward=_getitem_forward, infer=_getitem_infer, keeps_dtype=True,
                  vjp=_getitem_vjp, grad_name="IndexBackward0", onnx=onnx_graph_rules.getitem)


def getitem(x, key):
    """`x[key]`: ints, slices, None, Ellipsis, integer arrays and boolean masks.

    Eagerly, basic indexing (ints, slices, None, ...) returns a view sharing memory and the
    version counter with `x`, as in PyTorch; advanced indexing returns a copy.
    """
    if not isinstance(x, Tensor):
        x = as_tensor(x)
    if type(key) is int:  # x[t], the common case in loops: no parsing
        out = apply1(_getitem, x, key=(key,))
        if (x._node is None) == (out._node is None):  # symbolic too: writes reach `x`
            mark_view(out, x, (key,))
        return out
    template, tensors = parse_key(key)
    if tensors and x._node is None:
        tensors = [constant_like(t, x) for t in tensors]
    out = apply(_getitem, x, *tensors, key=template)
    if not tensors and (x._node is None) == (out._node is None):  # a view, eager or in graphs
        mark_view(out, x, template)
    return out


def _slice_assign_forward(xp, x, v, *, key):
    out = x.copy()
    out[build_key(key, ())] = v
    return out


def _slice_assign_vjp(g, inputs, out, needs, attrs):
    key = attrs["key"]
    gv = apply(_getitem, g, key=key)
    # g with the overwritten region zeroed (exact: g - g is 0), built from table ops so it
    # also differentiates symbolically
    gx = apply(_sub_op(), g, getitem_grad(gv, g, [], key)) if needs[0] else None
    return gx, (gv if needs[1] else None)


def _sub_op():
    return OPS["sub"]


_slice_assign = define(
    "slice_assign", forward=_slice_assign_forward,
    infer=lambda x, v, key: (x.shape, x.dtype), vjp=_slice_assign_vjp,
    grad_name="CopySlices",
    onnx=None, onnx_reason="eager in-place writes through views; graphs stay functional",
)


def slice_assign(x, v, key):
    """A copy of `x` with `x[key]` replaced by `v` (basic key template; PyTorch's CopySlices
    as a functional op: the history of an in-place write through a view)."""
    return apply(_slice_assign, x, v, key=key)


def _getitem_grad_forward(xp, g, x, *arrays, key):
    out = xp.zeros(x.shape, dtype=g.dtype)
    real = build_key(key, arrays)
    if _has_arrays(key):
        xp.add.at(out, real, g)  # repeated indices add up
    else:
        out[real] = g
    return out


def _getitem_grad_vjp(gg, inputs, out, needs, attrs):
    g, x, *index = inputs
    return (apply(_getitem, gg, *index, key=attrs["key"]), None) + (None,) * len(index)


_getitem_grad = define(
    "getitem_grad", forward=_getitem_grad_forward,
    infer=lambda g, x, *index, key: (x.shape, g.dtype), vjp=_getitem_grad_vjp,
    grad_name="IndexPutBackward0",
    onnx=None, onnx_reason="a gradient op (scatter-add): export the forward computation",
)


def getitem_grad(g, x, index, key):
    """Zeros shaped like `x` with `g` scatter-added at `x[key]` (the gradient of getitem)."""
    return apply(_getitem_grad, g, x, *index, key=key)

