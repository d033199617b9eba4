"""Shapes as graph tensors, as TF1 has them: `tf.shape(x)` is an int32 tensor read at run time,
and reshape / range / random ops take such tensors. Three small ops of the op table
(tf_shape, tf_reshape_to, tf_range) and what is known of a shape tensor when the graph is
built (`shape_hint`), so a `tf.reshape(x, tf.shape(y))` keeps y's known dims."""

from __future__ import annotations

import numpy as np

from ... import ops as _ops
from ...backends import backend_of
from ...core.registry import Spec, define
from ...dispatch import apply, apply1
from ...errors import ShapeError
from ...graph.builder import constant
from ...tensor import Tensor


def _shape_forward(xp, x):
    return xp.asarray(x.shape, dtype=np.int32)


def _shape_infer(x: Spec):
    return (len(x.shape),), np.dtype(np.int32)


shape_op = define("tf_shape", forward=_shape_forward, infer=_shape_infer,
                    onnx_reason="compat.v1's run-time shape: exported graphs have fixed shapes",
                    doc="tf.shape: the shape of x as an int32 vector, read at run time.")


def _host_ints(values) -> tuple:
    """A small int vector's entries as Python ints (they decide a shape: host values)."""
    return tuple(int(values[i]) for i in range(values.shape[0]))


def _reshape_forward(xp, x, shape, hint):
    target = _host_ints(shape)
    if target.count(-1) > 1 or (-1 not in target and int(np.prod(target)) != x.size):
        raise ShapeError(f"tf.reshape: cannot reshape a tensor of shape {x.shape} ({x.size} "
                         f"elements) to {list(target)}")
    return x.reshape(target)


def _reshape_infer(x: Spec, shape: Spec, hint):
    if len(shape.shape) != 1 or shape.shape[0] is None:
        raise ShapeError(f"tf.reshape: the shape tensor must be a vector of known length, got "
                         f"shape {shape.shape}")
    return tuple(hint), x.dtype


def _reshape_vjp(g, inputs, out, needs, attrs):
    x = inputs[0]
    return (_ops.reshape_like(g, x) if needs[0] else None, None)


reshape_op = define("tf_reshape_to", forward=_reshape_forward, infer=_reshape_infer,
                      vjp=_reshape_vjp, keeps_dtype=True,
                      onnx_reason="compat.v1's reshape to a run-time shape",
                      doc="tf.reshape to a shape given as a tensor (read at run time).")


def _range_forward(xp, start, limit, delta, dtype):
    kind = np.dtype(dtype).kind
    host = int if kind in "iu" else float
    start, limit, delta = host(start), host(limit), host(delta)
    if delta == 0:
        raise ShapeError("tf.range: delta must not be 0")
    return xp.arange(start, limit, delta, dtype=dtype)


def _range_infer(start: Spec, limit: Spec, delta: Spec, dtype):
    for name, spec in (("start", start), ("limit", limit), ("delta", delta)):
        if spec.shape != ():
            raise ShapeError(f"tf.range: {name} must be a scalar, got shape {spec.shape}")
    return (None,), np.dtype(dtype)


range_op = define("tf_range", forward=_range_forward, infer=_range_infer,
                    onnx_reason="compat.v1's range of run-time length",
                    doc="tf.range with tensor bounds: a vector whose length is known at run time.")


def _first_appearance(xp, x):
    values, first, inverse = xp.unique(x, return_index=True, return_inverse=True)
    order = xp.argsort(first)  # TF lists the distinct values in order of first appearance
    rank = xp.argsort(order)
    return values[order], rank[inverse.reshape(-1)]


def _unique_forward(xp, x):
    return _first_appearance(xp, x)[0]


def _unique_index_forward(xp, x, dtype):
    return _first_appearance(xp, x)[1].astype(dtype)


def _unique_infer(x: Spec):
    if len(x.shape) != 1:
        raise ShapeError(f"tf.unique: needs a 1-d tensor, got shape {x.shape}")
    return (None,), x.dtype


def _unique_index_infer(x: Spec, dtype):
    return _unique_infer(x)[0][:0] + (x.shape[0],), np.dtype(dtype)


unique_op = define("tf_unique", forward=_unique_forward, infer=_unique_infer,
                   onnx_reason="compat.v1's unique: a length known only at run time",
                   doc="tf.unique's values: the distinct entries in order of first appearance.")
unique_index_op = define("tf_unique_index", forward=_unique_index_forward,
                         infer=_unique_index_infer,
                         onnx_reason="compat.v1's unique: goes with tf_unique",
                         doc="tf.unique's idx: each entry's position among the distinct values.")


def _where_forward(xp, c):
    return xp.argwhere(c).astype(np.int64)


def _where_infer(c: Spec):
    if c.dtype.kind != "b":
        raise ShapeError(f"tf.where(condition): condition must be bool, got {c.dtype}")
    return (None, len(c.shape)), np.dtype(np.int64)


where_op = define("tf_where_indices", forward=_where_forward, infer=_where_infer,
                  onnx_reason="compat.v1's where(condition): a length known only at run time",
                  doc="tf.where(condition): the (n, rank) indices of the true entries.")


def _fill_forward(xp, dims, value, hint):
    return xp.full(_host_ints(dims), value, dtype=value.dtype)


def _fill_infer(dims: Spec, value: Spec, hint):
    if len(dims.shape) != 1 or value.shape != ():
        raise ShapeError(f"tf.fill: needs a vector of dims and a scalar value, got shapes "
                         f"{dims.shape} and {value.shape}")
    return tuple(hint), value.dtype


def _fill_vjp(g, inputs, out, needs, attrs):
    return (None, _ops.sum(g) if needs[1] else None)


fill_op = define("tf_fill", forward=_fill_forward, infer=_fill_infer, vjp=_fill_vjp,
                 onnx_reason="compat.v1's fill to a run-time shape",
                 doc="tf.fill / zeros / ones with dims given as a tensor (read at run time).")


def _with_shape_infer(x: Spec, shape):
    if len(shape) != len(x.shape) or any(s is not None and d is not None and s != d
                                         for s, d in zip(shape, x.shape)):
        raise ShapeError(f"tf.placeholder_with_default: the default's shape {x.shape} does not "
                         f"fit shape {tuple(shape)}")
    return tuple(shape), x.dtype


with_shape_op = define("tf_placeholder_with_default", forward=lambda xp, x, shape: x,
                       infer=_with_shape_infer, vjp=lambda g, inputs, out, needs, attrs: (g,),
                       keeps_dtype=True, onnx_reason="compat.v1's feedable default value",
                       doc="tf.placeholder_with_default: the default's value unless fed (with "
                           "the looser declared shape).")


def constant_value(t):
    """The value of `t` when the graph is built, or None: Python values, constants and the
    tf.shape of a fully known shape have one."""
    if not isinstance(t, Tensor):
        return np.asarray(t)
    if t._node is None:  # an eager value, on whichever backend holds it

        backend = backend_of(t._data, None)
        return np.asarray(t._data if backend is None else backend.to_numpy(t._data))
    node = t._node
    if node.op.name == "constant":
        return np.asarray(node.attrs["value"])
    if node.op.name == "tf_shape" and None not in node.inputs[0].shape:
        return np.asarray(node.inputs[0].shape, np.int32)
    return None


def shape_hint(t) -> tuple:
    """What is known of the shape a 1-d shape tensor `t` holds: one int or None per entry."""
    known = constant_value(t)
    if known is not None:
        return tuple(int(d) if d >= 0 else None for d in np.asarray(known).reshape(-1))
    hint = _node_hint(t._node)
    return hint if hint is not None else (None,) * (t.shape[0] or 0)


_PASS_THROUGH = ("unsqueeze", "reshape", "cast", "squeeze")


def _node_hint(node):
    """The known entries of a small int vector (or scalar) node, through the ops that build
    shapes: constants, tf.shape, stack/concat, reshapes and casts; None if not followed."""
    name = node.op.name
    if name == "constant":
        values = np.asarray(node.attrs["value"]).reshape(-1)
        return tuple(int(v) if v >= 0 else None for v in values)
    if name == "tf_shape":
        return tuple(node.inputs[0].shape)
    if name in _PASS_THROUGH:
        return _node_hint(node.inputs[0])
    if name == "concat":
        parts = [_node_hint(i) for i in node.inputs]
        if all(p is not None for p in parts):
            return tuple(d for p in parts for d in p)
    if name == "getitem" and node.inputs[0].op.name == "tf_shape":  # tf.shape(x)[i]
        key = node.attrs.get("key")
        if isinstance(key, tuple) and len(key) == 1 and isinstance(key[0], int):
            return (node.inputs[0].inputs[0].shape[key[0]],)
    return None if len(node.shape) > 1 else (None,) * (node.shape[0] if node.shape else 1)


def shape_tensor(value, what: str):
    """A shape argument as a tuple of ints when it is known at build time, else an int32 vector
    tensor (a tensor, or a list holding tensors, as TF accepts)."""
    if isinstance(value, Tensor):
        known = constant_value(value)
        if known is not None:
            return tuple(int(d) for d in known.reshape(-1))
        if value.ndim != 1:
            raise ShapeError(f"{what}: a shape tensor must be 1-d, got shape {value.shape}")
        return _ops.cast(value, np.int32) if value.dtype != np.int32 else value
    if isinstance(value, (int, np.integer)):
        return (int(value),)
    items = list(value)
    if any(isinstance(v, Tensor) and constant_value(v) is None for v in items):
        parts = [_ops.cast(_ops.reshape(v, ()), np.int32) if isinstance(v, Tensor)
                 else constant(np.asarray(int(v), np.int32)) for v in items]
        return _ops.stack(parts, 0)
    return tuple(int(constant_value(v)) for v in items)


def shape_of(x) -> Tensor:
    """tf.shape(x) as an op."""
    return apply1(shape_op, x)


def reshape_to(x, shape: Tensor) -> Tensor:
    """x reshaped to the shape a tensor holds at run time."""
    hint = shape_hint(shape)
    return apply(reshape_op, x, shape, hint=hint)


def arange(start, limit, delta, dtype) -> Tensor:
    """tf.range with tensor bounds."""
    return apply(range_op, start, limit, delta, dtype=np.dtype(dtype))


# --- tile and slice by amounts read at run time ------------------------------------------------
def _tile_forward(xp, x, multiples, hint):
    return xp.tile(x, _host_ints(multiples))


def _tile_infer(x: Spec, multiples: Spec, hint):
    if tuple(multiples.shape) != (len(x.shape),):
        raise ShapeError(f"tf.tile: multiples of shape {multiples.shape} need one entry per dim "
                         f"of {x.shape}")
    return tuple(hint), x.dtype


def _tile_vjp(g, inputs, out, needs, attrs):
    x, multiples = inputs
    return (apply(tile_grad_op, g, x, multiples) if needs[0] else None, None)


def _tile_grad_forward(xp, g, x, multiples):
    reps = _host_ints(multiples)
    split = [d for pair in zip(reps, x.shape) for d in pair]  # (m0, d0, m1, d1, ...)
    return g.reshape(split).sum(axis=tuple(range(0, len(split), 2)))


def _tile_grad_infer(g: Spec, x: Spec, multiples: Spec):
    return x.shape, g.dtype


def _tile_grad_vjp(gg, inputs, out, needs, attrs):
    g, x, multiples = inputs
    return (apply(tile_op, gg, multiples, hint=tuple(g.shape)) if needs[0] else None, None,
            None)


tile_op = define("tf_tile", forward=_tile_forward, infer=_tile_infer, vjp=_tile_vjp,
                 keeps_dtype=True, onnx_reason="compat.v1's tile by run-time multiples",
                 doc="tf.tile with multiples given as a tensor (read at run time).")
tile_grad_op = define("tf_tile_grad", forward=_tile_grad_forward, infer=_tile_grad_infer,
                      vjp=_tile_grad_vjp, onnx_reason="the gradient of compat.v1's tile",
                      doc="tf_tile's gradient: each tile of g summed back onto x's shape.")


def _slice_key(begin, size, shape):
    starts, sizes = _host_ints(begin), _host_ints(size)
    key = []
    for b, s, n in zip(starts, sizes, shape):
        stop = n if s == -1 else b + s
        if not 0 <= b <= stop <= n:
            raise ShapeError(f"tf.slice: begin {list(starts)} and size {list(sizes)} do not fit "
                             f"shape {tuple(shape)}")
        key.append(slice(b, stop))
    return tuple(key)


def _slice_forward(xp, x, begin, size, hint):
    return x[_slice_key(begin, size, x.shape)]


def _slice_infer(x: Spec, begin: Spec, size: Spec, hint):
    for name, spec in (("begin", begin), ("size", size)):
        if tuple(spec.shape) != (len(x.shape),):
            raise ShapeError(f"tf.slice: {name} of shape {spec.shape} needs one entry per dim "
                             f"of {x.shape}")
    return tuple(hint), x.dtype


def _slice_vjp(g, inputs, out, needs, attrs):
    x, begin, size = inputs
    return (apply(slice_grad_op, g, x, begin, size) if needs[0] else None, None, None)


def _slice_grad_forward(xp, g, x, begin, size):
    out = xp.zeros(x.shape, dtype=g.dtype)
    out[_slice_key(begin, size, x.shape)] = g
    return out


def _slice_grad_infer(g: Spec, x: Spec, begin: Spec, size: Spec):
    return x.shape, g.dtype


def _slice_grad_vjp(gg, inputs, out, needs, attrs):
    g, x, begin, size = inputs
    return (apply(slice_op, gg, begin, size, hint=tuple(g.shape)) if needs[0] else None,
            None, None, None)


slice_op = define("tf_slice", forward=_slice_forward, infer=_slice_infer, vjp=_slice_vjp,
                  keeps_dtype=True, onnx_reason="compat.v1's slice at run-time offsets",
                  doc="tf.slice with begin/size given as tensors (read at run time).")
slice_grad_op = define("tf_slice_grad", forward=_slice_grad_forward, infer=_slice_grad_infer,
                       vjp=_slice_grad_vjp, onnx_reason="the gradient of compat.v1's slice",
                       doc="tf_slice's gradient: g placed in zeros of x's shape.")
