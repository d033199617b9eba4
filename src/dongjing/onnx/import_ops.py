"""The ONNX op types whose import is more than the inverse of an op record's 1:1 export
(attributes, opset differences, decompositions, dtype checks): `HAND_WRITTEN[op_type](ctx, ins,
attrs) -> Tensor | tuple`, written with dongjing ops so an imported model runs eagerly, in a
graph and under dj.jit, and differentiates. `ctx.static(t, what)` reads an input that must be
known at import time. The 1:1 imports are derived from the op table (`import_table`)."""

from __future__ import annotations

import numpy as np

from .. import ops
from ..nn import functional as F
from ..tensor import Tensor
from . import fold_budget
from .errors import OnnxImportError, require_onnx
from .import_rnn import recurrent
from .import_source import tensor_array

UNKNOWN_DIM = -(2 ** 62)  # markers at or below: dim d of an unknown-shaped tensor (see
# importer.Context.mark)


def _axis(axis: int, ndim: int) -> int:
    return axis + ndim if axis < 0 else axis


def _ints(ctx, ins, attrs, index: int, name: str, since: int):
    """An int list given as attribute `name` (older opsets) or as input `index` (newer)."""
    if ctx.opset < since:
        value = attrs.get(name)
        return None if value is None else [int(v) for v in value]
    if len(ins) <= index or ins[index] is None:
        return None
    return [int(v) for v in np.asarray(ctx.static(ins[index], name)).reshape(-1)]


def _pair_pads(op: str, pads, n: int = 2):
    pads = list(pads or [0] * (2 * n))
    if pads[:n] != pads[n:]:
        raise OnnxImportError(f"{op}: asymmetric pads {pads} are not supported")
    return tuple(pads[:n])


def _check_window_attrs(op: str, x: Tensor, attrs: dict) -> None:
    if x.ndim != 4:
        raise OnnxImportError(f"{op}: only 2-d windows (N, C, H, W inputs) are supported, got "
                              f"an input of shape {x.shape}")
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID", "NOTSET", "VALID"):
        raise OnnxImportError(f"{op}: auto_pad={attrs['auto_pad']!r} is not supported")
    if any(d != 1 for d in attrs.get("dilations", [1, 1])):
        raise OnnxImportError(f"{op}: dilations {attrs['dilations']} are not supported")
    if attrs.get("ceil_mode", 0):
        raise OnnxImportError(f"{op}: ceil_mode=1 is not supported")


# --- layers --------------------------------------------------------------------------------
def _conv(ctx, ins, attrs):
    x, w = ins[0], ins[1]
    b = ins[2] if len(ins) > 2 else None
    _check_window_attrs("Conv", x, attrs)
    if attrs.get("group", 1) != 1:
        raise OnnxImportError(f"Conv: group={attrs['group']} (grouped convolution) is not "
                              "supported")
    return F.conv2d(x, w, b, tuple(attrs.get("strides", [1, 1])),
                    _pair_pads("Conv", attrs.get("pads")))


def _batch_norm(ctx, ins, attrs):
    if attrs.get("training_mode", 0):
        raise OnnxImportError("BatchNormalization: training_mode=1 is not supported")
    x, scale, bias, mean, var = ins[:5]
    return F.batch_norm(x, mean, var, scale, bias, training=False,
                        eps=attrs.get("epsilon", 1e-5))


def _max_pool(ctx, ins, attrs):
    x = ins[0]
    _check_window_attrs("MaxPool", x, attrs)
    if attrs.get("storage_order", 0):
        raise OnnxImportError("MaxPool: storage_order=1 is not supported")
    return F.max_pool2d(x, tuple(attrs["kernel_shape"]), tuple(attrs.get("strides", [1, 1])),
                        _pair_pads("MaxPool", attrs.get("pads")))


def _average_pool(ctx, ins, attrs):
    x = ins[0]
    _check_window_attrs("AveragePool", x, attrs)
    kernel, stride = tuple(attrs["kernel_shape"]), tuple(attrs.get("strides", [1, 1]))
    pads = _pair_pads("AveragePool", attrs.get("pads"))
    out = F.avg_pool2d(x, kernel, stride, pads)
    if any(pads) and not attrs.get("count_include_pad", 0):
        # dongjing counts the zero padding; ONNX's default divides by the real elements only
        out = out / F.avg_pool2d(ops.ones_like(x), kernel, stride, pads)
    return out


def _global_pool(reduce):
    def rule(ctx, ins, attrs):
        x = ins[0]
        return reduce(x, tuple(range(2, x.ndim)), keepdim=True)

    return rule


def _gemm(ctx, ins, attrs):
    a, b = ins[0], ins[1]
    if attrs.get("transA", 0):
        a = ops.transpose(a, -2, -1)
    if attrs.get("transB", 0):
        b = ops.transpose(b, -2, -1)
    out = ops.matmul(a, b)
    if attrs.get("alpha", 1.0) != 1.0:
        out = out * attrs["alpha"]
    if len(ins) > 2 and ins[2] is not None:
        c = ins[2]
        out = out + (c * attrs["beta"] if attrs.get("beta", 1.0) != 1.0 else c)
    return out


def _softmax(fn):
    def rule(ctx, ins, attrs):
        x = ins[0]
        if ctx.opset >= 13:
            return fn(x, attrs.get("axis", -1))
        axis = _axis(attrs.get("axis", 1), x.ndim)  # old opsets: softmax of the 2-d coercion
        if axis == x.ndim - 1:
            return fn(x, -1)
        flat = _flatten(x, axis)
        return ops.reshape_like(fn(flat, 1), x)

    return rule


def _flatten(x: Tensor, axis: int) -> Tensor:
    inner = x.shape[axis:]
    if any(d is None for d in inner):
        raise OnnxImportError(f"Flatten: the flattened dims of {x.shape} must be known")
    size = int(np.prod(inner)) if inner else 1
    if axis == 0:
        return ops.reshape(x, (1, -1))
    return ops.reshape(x, (-1, size))


# --- arithmetic and functions --------------------------------------------------------------
def _unary(fn):
    return lambda ctx, ins, attrs: fn(ins[0])


def _div(ctx, ins, attrs):
    a, b = ins
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        raise OnnxImportError("Div: integer division of values computed at run time is not "
                              "supported")
    return ops.div(a, b)


def _variadic(fn):
    def rule(ctx, ins, attrs):
        out = ins[0]
        for other in ins[1:]:
            out = fn(out, other)
        return out

    return rule


def _clip(ctx, ins, attrs):
    x = ins[0]
    if ctx.opset < 11:
        return ops.clip(x, attrs.get("min"), attrs.get("max"))
    out = x
    if len(ins) > 1 and ins[1] is not None:
        out = ops.maximum(out, ops.cast(ins[1], x.dtype))
    if len(ins) > 2 and ins[2] is not None:
        out = ops.minimum(out, ops.cast(ins[2], x.dtype))
    return out


def _leaky_relu(ctx, ins, attrs):
    x = ins[0]
    return ops.where(x > 0, x, x * attrs.get("alpha", 0.01))


def _cast(ctx, ins, attrs):
    helper = require_onnx(OnnxImportError).helper

    return ops.cast(ins[0], helper.tensor_dtype_to_np_dtype(attrs["to"]))


def _arg_extreme(fn, op_type: str):
    def rule(ctx, ins, attrs):
        if attrs.get("select_last_index", 0):
            raise OnnxImportError(f"{op_type}: select_last_index=1 is not supported")
        x = ins[0]
        return fn(x, _axis(attrs.get("axis", 0), x.ndim), bool(attrs.get("keepdims", 1)))

    return rule


def _reduce(fn, since: int):
    def rule(ctx, ins, attrs):
        x = ins[0]
        axes = _ints(ctx, ins, attrs, 1, "axes", since)
        keep = bool(attrs.get("keepdims", 1))
        if not axes:
            if attrs.get("noop_with_empty_axes", 0):
                return x
            axes = list(range(x.ndim))
        return fn(x, tuple(_axis(a, x.ndim) for a in axes), keep)

    return rule


# --- shapes --------------------------------------------------------------------------------
def _reshape(ctx, ins, attrs):
    x = ins[0]
    shape = [int(d) for d in np.asarray(ctx.static(ins[1], "shape", True)).reshape(-1)]
    copies = []  # target positions holding a dim of x unknown until run time
    known, unknown_left = [], {i for i, d in enumerate(x.shape) if d is None}
    for i, d in enumerate(shape):
        if d <= UNKNOWN_DIM:  # a dim read from a shape computed at build time
            node, source = ctx.marked_dim(d)
            if node is not x._node:
                raise OnnxImportError("the target shape uses an unknown dim of another tensor")
        elif d == 0 and not attrs.get("allowzero", 0):  # ONNX: 0 copies the input's dim
            source = i
        else:
            known.append((i, d))
            continue
        if x.shape[source] is None:
            unknown_left.discard(source)
            copies.append(i)
        else:
            known.append((i, x.shape[source]))
    out = [d for _, d in sorted(known + [(i, None) for i in copies])]
    if not copies:
        return ops.reshape(x, tuple(out))
    if len(copies) > 1 or unknown_left:
        raise OnnxImportError(f"cannot reshape {x.shape} to {shape}: too many dims unknown "
                              "until run time")
    if -1 in out:  # the unknown dim is copied, so -1 follows from the known dims
        rest = int(np.prod([d for d in x.shape if d is not None]))
        other = int(np.prod([d for d in out if d not in (None, -1)]))
        out[out.index(-1)] = rest // other
    return ops.reshape(x, tuple(-1 if d is None else d for d in out))


def _transpose(ctx, ins, attrs):
    x = ins[0]
    perm = attrs.get("perm", list(range(x.ndim))[::-1])
    return ops.permute(x, tuple(int(p) for p in perm))


def _concat(ctx, ins, attrs):
    return ops.concat([t for t in ins if t is not None], _axis(attrs["axis"], ins[0].ndim))


def _gather(ctx, ins, attrs):
    x, idx = ins
    axis = _axis(attrs.get("axis", 0), x.ndim)
    key = idx
    if ctx.is_static(idx) and np.ndim(ctx.static(idx, "indices")) == 0:
        key = int(ctx.static(idx, "indices"))
    return ops.getitem(x, (slice(None),) * axis + (key,))


def _unsqueeze(ctx, ins, attrs):
    x = ins[0]
    axes = _ints(ctx, ins, attrs, 1, "axes", 13)
    rank = x.ndim + len(axes)
    for a in sorted(_axis(a, rank) for a in axes):
        x = ops.unsqueeze(x, a)
    return x


def _squeeze(ctx, ins, attrs):
    x = ins[0]
    axes = _ints(ctx, ins, attrs, 1, "axes", 13)
    if axes is None:
        return ops.squeeze(x)
    return ops.squeeze(x, tuple(_axis(a, x.ndim) for a in axes))


def _flatten_rule(ctx, ins, attrs):
    x = ins[0]
    return _flatten(x, _axis(attrs.get("axis", 1), x.ndim))


def _slice(ctx, ins, attrs):
    x = ins[0]
    if ctx.opset < 10:
        starts, ends = attrs["starts"], attrs["ends"]
        axes, steps = attrs.get("axes"), None
    else:
        starts, ends = _ints(ctx, ins, attrs, 1, "starts", 10), _ints(ctx, ins, attrs, 2, "ends",
                                                                      10)
        axes, steps = _ints(ctx, ins, attrs, 3, "axes", 10), _ints(ctx, ins, attrs, 4, "steps",
                                                                   10)
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    key = [slice(None)] * x.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        key[_axis(axis, x.ndim)] = slice(start, end, step)
    return ops.getitem(x, tuple(key))


def _zeros_of_shape(ctx, shape: list, dtype) -> Tensor:
    """Zeros of a shape value whose entries are sizes or markers of dims unknown until run
    time: a constant with 1 at each marker, plus, per marker, zeros along the dim it stands
    for (taken from its tensor), broadcast into place."""
    base_shape = [1 if d <= UNKNOWN_DIM else d for d in shape]
    base = _filled(base_shape, np.zeros((), dtype), "shape")
    for position, d in enumerate(shape):
        if d > UNKNOWN_DIM:
            continue
        node, dim = ctx.marked_dim(d)
        source = Tensor._symbolic(node)
        key = tuple(slice(None) if i == dim else 0 for i in range(len(node.shape)))
        ruler = ops.cast(ops.zeros_like(source[key]), dtype)  # (unknown,) zeros
        place = [1] * len(shape)
        place[position] = -1
        base = base + ops.reshape(ruler, tuple(place))
    return base


def _filled(shape: list, value: np.ndarray, what: str) -> Tensor:
    """`value` (0-d) filling `shape`: a constant when small, else a broadcast computed at run
    time (so a small model cannot make the import allocate a huge tensor)."""
    if fold_budget.shape_bytes(shape, value.dtype, what) <= fold_budget.FOLD_BUDGET:
        return Tensor._make(np.full(shape, value, dtype=value.dtype))
    return ops.expand(Tensor._make(value), tuple(shape))


def _expand(ctx, ins, attrs):
    x = ins[0]
    shape = [int(d) for d in np.asarray(ctx.static(ins[1], "shape", True)).reshape(-1)]
    return x + _zeros_of_shape(ctx, shape, x.dtype)  # ONNX Expand broadcasts both ways


def _pad(ctx, ins, attrs):
    x = ins[0]
    mode = attrs.get("mode", b"constant")
    if mode not in (b"constant", "constant"):
        raise OnnxImportError(f"Pad: mode {mode!r} is not supported (only constant)")
    pads = _ints(ctx, ins, attrs, 1, "pads", 11)
    value = 0.0
    if ctx.opset < 11:
        value = attrs.get("value", 0.0)
    elif len(ins) > 2 and ins[2] is not None:
        value = float(np.asarray(ctx.static(ins[2], "constant_value")).reshape(()))
    axes = _ints(ctx, ins, attrs, 3, "axes", 18) or list(range(x.ndim))
    n = len(axes)
    for axis, before, after in zip(axes, pads[:n], pads[n:]):
        axis = _axis(axis, x.ndim)
        edge = (slice(None),) * axis + (slice(0, 1),)
        parts = []
        for size in (before, after):
            if size < 0:
                raise OnnxImportError(f"Pad: negative pads {pads} are not supported")
            shape = [-1] * x.ndim
            shape[axis] = size
            parts.append(ops.expand(ops.full_like(x[edge], value), tuple(shape)) if size else None)
        pieces = [p for p in (parts[0], x, parts[1]) if p is not None]
        x = ops.concat(pieces, axis) if len(pieces) > 1 else x
    return x


def _constant_of_shape(ctx, ins, attrs):
    shape = [int(d) for d in np.asarray(ctx.static(ins[0], "shape", True)).reshape(-1)]
    value = attrs.get("value")
    fill = (tensor_array(value, ctx.base_dir, "value").reshape(-1) if value is not None
            else np.zeros(1, np.float32))
    if fill.size != 1:
        raise OnnxImportError(f"value must hold one element, got {fill.size}")
    if any(UNKNOWN_DIM < d < 0 for d in shape):
        raise OnnxImportError(f"negative dim in shape {shape}")
    if all(d >= 0 for d in shape):
        return _filled(shape, fill.reshape(()), "shape")
    return _zeros_of_shape(ctx, shape, fill.dtype) + Tensor._make(fill[0])


def _shape(ctx, ins, attrs):
    x = ins[0]
    dims = np.asarray([ctx.mark(x, i) if d is None else d for i, d in enumerate(x.shape)],
                      dtype=np.int64)
    return Tensor._make(dims[attrs.get("start", 0):attrs.get("end", len(dims))])


def _constant(ctx, ins, attrs):
    if "value" in attrs:
        return Tensor._make(tensor_array(attrs["value"], ctx.base_dir, "value"))
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):
        if key in attrs:
            return Tensor._make(np.asarray(attrs[key], dtype=dtype))
    raise OnnxImportError(f"Constant: unsupported attributes {sorted(attrs)}")


def _dropout(ctx, ins, attrs):
    return ins[0]


def _rnn(kind):
    def rule(ctx, ins, attrs):
        return recurrent(kind, ctx, ins, attrs)

    return rule


HAND_WRITTEN: dict = {
    "Conv": _conv,
    "BatchNormalization": _batch_norm,
    "MaxPool": _max_pool,
    "AveragePool": _average_pool,
    "GlobalAveragePool": _global_pool(ops.mean),
    "GlobalMaxPool": _global_pool(ops.amax),
    "Gemm": _gemm,
    "Flatten": _flatten_rule,
    "Identity": _unary(lambda x: x),
    "LeakyRelu": _leaky_relu,
    "Softmax": _softmax(ops.softmax),
    "LogSoftmax": _softmax(ops.log_softmax),
    "Div": _div,
    "Where": lambda ctx, ins, attrs: ops.where(*ins),
    "Max": _variadic(ops.maximum),
    "Min": _variadic(ops.minimum),
    "Sum": _variadic(ops.add),
    "Clip": _clip,
    "Cast": _cast,
    "ArgMax": _arg_extreme(ops.argmax, "ArgMax"),
    "ArgMin": _arg_extreme(ops.argmin, "ArgMin"),
    "ReduceSum": _reduce(ops.sum, 13),
    "ReduceMean": _reduce(ops.mean, 18),
    "ReduceMax": _reduce(ops.amax, 18),
    "ReduceMin": _reduce(ops.amin, 18),
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Concat": _concat,
    "Gather": _gather,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Slice": _slice,
    "Expand": _expand,
    "ConstantOfShape": _constant_of_shape,
    "Pad": _pad,
    "Shape": _shape,
    "Constant": _constant,
    "Dropout": _dropout,
    "RNN": _rnn("RNN"),
    "LSTM": _rnn("LSTM"),
    "GRU": _rnn("GRU"),
}
