"""How each op of the op table exports to ONNX: one entry per op, in one of two tables.

`OP_EXPORTS[name]` is either an `Onnx(...)` record (the op is one ONNX node: its type, which
dongjing attributes become which ONNX attributes, and whether inputs are cast to one dtype
first) or a function `rule(e, node, ins) -> name | [names]` emitting a decomposition through
the `Emitter` `e` (`ins` are the ONNX names of the node's inputs). `NOT_EXPORTABLE[name]` says
why an op has no export. A test checks that every op is in exactly one of the two.

Each entry is meant to move onto its op record (`define(..., onnx=...)`); `rule_for` already
falls back to the record's `onnx` / `onnx_reason` for an op these tables do not name.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import dtypes
from .errors import OnnxExportError


class Onnx(NamedTuple):
    """A direct export: one ONNX node of `op_type`.

    `attrs` maps ONNX attribute -> dongjing attribute name; `cast` is "out" (inputs cast to the
    output dtype), "common" (to their promoted dtype) or None.
    """

    op_type: str
    attrs: dict = {}
    cast: str | None = None


# --- helpers the rules share -------------------------------------------------------------
def _in_dtype(node, i: int):
    return node.inputs[i].dtype


def _axes(e, op_type: str, x: str, axes, keepdims: int, **attrs) -> str:
    """A Reduce* node; axes moved from attribute to input in opset 13 (Sum) / 18 (the rest)."""
    input_since = 13 if op_type == "ReduceSum" else 18
    if axes is None:
        return e.node(op_type, [x], keepdims=keepdims, **attrs)
    if e.opset >= input_since:
        return e.node(op_type, [x, e.ints(axes, "axes")], keepdims=keepdims, **attrs)
    return e.node(op_type, [x], axes=list(axes), keepdims=keepdims, **attrs)


def _scalar(e, value, dtype, name="scalar") -> str:
    return e.const(np.asarray(value, dtype=dtype), name=name)


# --- source ops --------------------------------------------------------------------------
def _bound(e, node, ins):
    """Placeholders and sub-graph arguments: bound to graph inputs before the walk."""
    raise OnnxExportError(f"internal: {node.op.name} {node.name!r} was not bound to an input")


def _constant(e, node, ins):
    return e.const(node.attrs["value"], name=node.name)


NOT_TRAINABLE = "dongjing: not trainable"  # the doc_string of a buffer's initializer


def _variable(e, node, ins):
    ref = node.attrs["ref"]
    trainable = getattr(ref, "trainable", ref.requires_grad)
    return e.const(ref._data, name=node.name, initializer=True,
                   doc="" if trainable else NOT_TRAINABLE)


# --- elementwise -------------------------------------------------------------------------
def _ne(e, node, ins):
    common = dtypes.promote(_in_dtype(node, 0), _in_dtype(node, 1))
    a, b = (e.cast(n, _in_dtype(node, i), common) for i, n in enumerate(ins))
    return e.node("Not", [e.node("Equal", [a, b], name=node.name + "_eq")])


def _pow_scalar(e, node, ins):
    x = e.cast(ins[0], _in_dtype(node, 0), node.dtype)
    return e.node("Pow", [x, _scalar(e, node.attrs["exponent"], node.dtype, "exponent")])


def _relu_backward(e, node, ins):
    g, x = ins
    positive = e.node("Greater", [x, _scalar(e, 0, _in_dtype(node, 1), "zero")],
                      name=node.name + "_positive")
    return e.node("Mul", [e.cast(g, _in_dtype(node, 0), node.dtype),
                          e.cast(positive, np.bool_, node.dtype)])


def _tanh_backward(e, node, ins):
    g, y = (e.cast(n, _in_dtype(node, i), node.dtype) for i, n in enumerate(ins))
    one_minus = e.node("Sub", [_scalar(e, 1, node.dtype, "one"), e.node("Mul", [y, y])])
    return e.node("Mul", [g, one_minus])


def _where(e, node, ins):
    c, a, b = ins
    return e.node("Where", [c, e.cast(a, _in_dtype(node, 1), node.dtype),
                            e.cast(b, _in_dtype(node, 2), node.dtype)])


def _clip(e, node, ins):
    bounds = [_scalar(e, node.attrs[k], node.dtype, k) if node.attrs.get(k) is not None else ""
              for k in ("min", "max")]
    return e.node("Clip", [ins[0]] + bounds)


def _cast(e, node, ins):
    if _in_dtype(node, 0) == node.dtype:
        return e.node("Identity", ins)
    return e.cast(ins[0], _in_dtype(node, 0), node.dtype)


def _fill_like(e, node, ins):
    from onnx import numpy_helper

    value = numpy_helper.from_array(np.asarray([node.attrs["value"]], dtype=node.dtype))
    return e.node("ConstantOfShape", [e.node("Shape", ins, name=node.name + "_shape")],
                  value=value)


# --- shapes ------------------------------------------------------------------------------
def _reshape(e, node, ins):
    shape = node.attrs["shape"]
    zero = any(d == 0 for d in shape)  # a literal 0 is a size, not "copy this dim"
    if zero and e.opset < 14:
        raise OnnxExportError(f"reshape to {shape} (a zero-size dim) needs opset 14 or newer")
    return e.node("Reshape", [ins[0], e.ints(shape, "shape")], allowzero=1 if zero else None)


def _reshape_like(e, node, ins):
    return e.node("Reshape", [ins[0], e.node("Shape", [ins[1]], name=node.name + "_shape")])


def _expand(e, node, ins):
    # Expand broadcasts both ways, so a dim of 1 in the target keeps the input's dim (-1)
    shape = [1 if d == -1 else d for d in node.attrs["shape"]]
    return e.node("Expand", [ins[0], e.ints(shape, "shape")])


def _broadcast_to_like(e, node, ins):
    return e.node("Expand", [ins[0], e.node("Shape", [ins[1]], name=node.name + "_shape")])


def _unsqueeze(e, node, ins):
    return e.node("Unsqueeze", [ins[0], e.ints([node.attrs["dim"]], "axes")])


def _squeeze(e, node, ins):
    return e.node("Squeeze", [ins[0], e.ints(node.attrs["dim"], "axes")])


def _concat(e, node, ins):
    ins = [e.cast(n, _in_dtype(node, i), node.dtype) for i, n in enumerate(ins)]
    return e.node("Concat", ins, axis=node.attrs["dim"])


# --- reductions --------------------------------------------------------------------------
def _sum(e, node, ins):
    x = e.cast(ins[0], _in_dtype(node, 0), node.dtype)
    return _axes(e, "ReduceSum", x, node.attrs.get("dim"), int(node.attrs.get("keepdim", False)))


def _sum_to_like(e, node, ins):
    """`g` summed over the dims broadcasting stretched: decided now when both shapes are known,
    else at run time (the axes computed from the two Shapes)."""
    g, like = node.inputs
    lead = len(g.shape) - len(like.shape)
    if None not in g.shape and None not in like.shape:
        axes = list(range(lead)) + [lead + i for i, d in enumerate(like.shape)
                                    if d == 1 and g.shape[lead + i] != 1]
        if not axes:
            return e.node("Identity", [ins[0]])
        summed = _axes(e, "ReduceSum", ins[0], axes, 1, name=node.name + "_sum")
        return e.node("Reshape", [summed, e.ints(like.shape, "shape")])
    like_shape = e.node("Shape", [ins[1]], name=node.name + "_like_shape")
    padded = like_shape if not lead else e.node(
        "Concat", [e.ints([1] * lead, "ones"), like_shape], axis=0, name=node.name + "_padded")
    one = e.ints([1], "one")
    stretched = e.node("And", [e.node("Equal", [padded, one], name=node.name + "_one"),
                               e.node("Not", [e.node("Equal", [e.node(
                                   "Shape", [ins[0]], name=node.name + "_g_shape"), one],
                                   name=node.name + "_g_one")], name=node.name + "_wide")],
                       name=node.name + "_stretched")
    axes = e.node("Reshape", [e.node("NonZero", [stretched], name=node.name + "_where"),
                              e.ints([-1], "flat")], name=node.name + "_axes")
    summed = e.node("ReduceSum", [ins[0], axes], keepdims=1, noop_with_empty_axes=1,
                    name=node.name + "_sum")
    return e.node("Reshape", [summed, like_shape])


def _extreme(op_type):
    def rule(e, node, ins):
        return _axes(e, op_type, ins[0], node.attrs.get("dim"),
                     int(node.attrs.get("keepdim", False)))

    return rule


def _arg(op_type):
    def rule(e, node, ins):
        dim, keepdim = node.attrs.get("dim"), int(node.attrs.get("keepdim", False))
        if dim is not None:
            return e.node(op_type, ins, axis=dim, keepdims=keepdim)
        flat = e.node("Reshape", [ins[0], e.ints([-1], "shape")], name=node.name + "_flat")
        out = e.node(op_type, [flat], axis=0, keepdims=0, name=node.name + "_flat_index")
        shape = [1] * len(node.inputs[0].shape) if keepdim else []
        return e.node("Reshape", [out, e.ints(shape, "shape")])

    return rule


def _count(e, node, ins):
    x = node.inputs[0]
    axes = range(len(x.shape)) if node.attrs.get("dim") is None else node.attrs["dim"]
    sizes = [x.shape[a] for a in axes]
    if all(d is not None for d in sizes):  # known now: a constant
        return e.const(np.asarray(int(np.prod(sizes)), dtype=node.dtype), name=node.name)
    shape = e.node("Shape", ins, name=node.name + "_shape")
    picked = e.node("Gather", [shape, e.ints(list(axes), "dims")], name=node.name + "_dims")
    n = _axes(e, "ReduceProd", picked, None, 0, name=node.name + "_n")
    return e.cast(n, np.int64, node.dtype)


# --- indexing ----------------------------------------------------------------------------
_BIG = np.iinfo(np.int64).max


def _slice_bounds(start, stop, step):
    step = 1 if step is None else step
    if step > 0:
        return (0 if start is None else start), (_BIG if stop is None else stop), step
    return (-1 if start is None else start), (-_BIG if stop is None else stop), step


def _is_full(item) -> bool:
    return item is Ellipsis or item in (("slice", None, None, None), ("slice", None, None, 1))


def _leading_advanced(e, node, ins):
    """`x[i, j, ...]`: integer tensors (and ints) indexing the leading dims together, the rest
    whole, as GatherND on the indices broadcast and stacked; a leading bool mask as NonZero."""
    from ..ops.index import Slot

    key, specs = node.attrs["key"], node.inputs[1:]
    lead = 0
    while lead < len(key) and (type(key[lead]) in (int, Slot)):
        lead += 1
    if lead == 0 or not all(_is_full(k) for k in key[lead:]):
        raise OnnxExportError("getitem: index tensors export when they (with any ints) index "
                              "the leading dims together, the other dims taken whole")
    masks = [k for k in key[:lead] if type(k) is Slot and specs[k.i].dtype.kind == "b"]
    if masks:
        if lead != 1:
            raise OnnxExportError("getitem: a bool mask exports only as the sole leading index")
        where = e.node("NonZero", [ins[1]], name=node.name + "_nonzero")  # (k, n)
        index = e.node("Transpose", [where], perm=[1, 0], name=node.name + "_where")
        return e.node("GatherND", [ins[0], index])
    parts = []
    for k in key[:lead]:
        if type(k) is int:
            parts.append(e.const(np.asarray(k, np.int64), name="index"))
        else:
            parts.append(e.cast(ins[1 + k.i], specs[k.i].dtype, np.int64))
    zero = None  # broadcast every index to the common shape by adding zeros shaped like each
    for part in parts:
        scaled = e.node("Mul", [part, e.const(np.asarray(0, np.int64), name="zero")],
                        name=node.name + "_zero")
        zero = scaled if zero is None else e.node("Add", [zero, scaled], name=node.name + "_z")
    stacked = [e.node("Unsqueeze", [e.node("Add", [p, zero], name=node.name + "_b"),
                                    e.ints([-1], "axes")], name=node.name + "_u") for p in parts]
    index = stacked[0] if len(stacked) == 1 else e.node("Concat", stacked, axis=-1,
                                                        name=node.name + "_index")
    return e.node("GatherND", [ins[0], index])


def _getitem(e, node, ins):
    from ..ops.index import Slot

    key, x = node.attrs["key"], ins[0]
    index_specs = node.inputs[1:]
    if index_specs and (len(index_specs) > 1 or any(type(k) is int for k in key)
                        or index_specs[0].dtype.kind == "b"):
        return _leading_advanced(e, node, ins)
    ndim = len(node.inputs[0].shape)
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    items = []
    for k in key:
        if k is Ellipsis:
            items.extend([("slice", None, None, None)] * (ndim - used))
        else:
            items.append(k)
    axis, step_no = 0, 0
    for k in items:
        step_no += 1
        e_name = f"{node.name}_{step_no}"
        if k is None:
            x = e.node("Unsqueeze", [x, e.ints([axis], "axes")], name=e_name)
            axis += 1
        elif type(k) is int:
            x = e.node("Gather", [x, e.const(np.asarray(k, np.int64), name="index")],
                       axis=axis, name=e_name)
        elif type(k) is Slot:
            x = e.node("Gather", [x, ins[1 + k.i]], axis=axis, name=e_name)
            axis += len(index_specs[k.i].shape)
        else:
            _, start, stop, step = k
            if (start, stop, step) not in ((None, None, None), (None, None, 1)):
                s, t, p = _slice_bounds(start, stop, step)
                x = e.node("Slice", [x, e.ints([s], "starts"), e.ints([t], "ends"),
                                     e.ints([axis], "axes"), e.ints([p], "steps")], name=e_name)
            axis += 1
    return e.node("Identity", [x])


# --- linear algebra, windows, misc -------------------------------------------------------
def _unfold2d(e, node, ins):
    """im2col as Pad + one strided Slice per kernel offset, stacked to (N, C, kh, kw, OH, OW)."""
    (kh, kw), (sh, sw), (ph, pw) = (node.attrs[k] for k in ("kernel", "stride", "padding"))
    x, dtype = ins[0], _in_dtype(node, 0)
    oh, ow = node.shape[4], node.shape[5]
    if ph or pw:
        pads = e.ints([0, 0, ph, pw, 0, 0, ph, pw], "pads")
        x = e.node("Pad", [x, pads, _scalar(e, node.attrs["pad_value"], dtype, "pad_value")],
                   mode="constant", name=node.name + "_padded")
    rows = []
    for i in range(kh):
        cols = []
        for j in range(kw):
            window = e.node("Slice", [x, e.ints([i, j], "starts"),
                                      e.ints([i + sh * oh, j + sw * ow], "ends"),
                                      e.ints([2, 3], "axes"), e.ints([sh, sw], "steps")],
                            name=f"{node.name}_{i}_{j}")
            cols.append(e.node("Unsqueeze", [window, e.ints([2, 3], "axes")],
                               name=f"{node.name}_{i}_{j}_u"))
        rows.append(cols[0] if kw == 1 else e.node("Concat", cols, axis=3,
                                                     name=f"{node.name}_row{i}"))
    return rows[0] if kh == 1 else e.node("Concat", rows, axis=2)


def _one_hot(e, node, ins):
    depth = e.const(np.asarray(node.attrs["num_classes"], np.int64), name="depth")
    values = e.const(np.asarray([0, 1], dtype=node.dtype), name="off_on")
    return e.node("OneHot", [ins[0], depth, values], axis=-1)


def _tuple_get(e, node, ins):
    values = e.values[node.inputs[0]]
    return values[node.attrs["index"]]


def _control(kind):
    def rule(e, node, ins):
        from .control_export import export_cond, export_while

        return (export_cond if kind == "cond" else export_while)(e, node, ins)

    return rule


OP_EXPORTS: dict = {
    # sources
    "placeholder": _bound,
    "arg": _bound,
    "constant": _constant,
    "variable": _variable,
    # comparisons and logic
    "eq": Onnx("Equal", cast="common"),
    "ne": _ne,
    "lt": Onnx("Less", cast="common"),
    "le": Onnx("LessOrEqual", cast="common"),
    "gt": Onnx("Greater", cast="common"),
    "ge": Onnx("GreaterOrEqual", cast="common"),
    "logical_and": Onnx("And"),
    "logical_or": Onnx("Or"),
    "logical_not": Onnx("Not"),
    # arithmetic and functions
    "add": Onnx("Add", cast="out"),
    "sub": Onnx("Sub", cast="out"),
    "mul": Onnx("Mul", cast="out"),
    "div": Onnx("Div", cast="out"),
    "neg": Onnx("Neg"),
    "pow": Onnx("Pow", cast="out"),
    "pow_scalar": _pow_scalar,
    "exp": Onnx("Exp"),
    "log": Onnx("Log"),
    "sqrt": Onnx("Sqrt"),
    "tanh": Onnx("Tanh"),
    "sigmoid": Onnx("Sigmoid"),
    "abs": Onnx("Abs"),
    "relu": Onnx("Relu"),
    "relu_backward": _relu_backward,
    "sign": Onnx("Sign"),
    "tanh_backward": _tanh_backward,
    "maximum": Onnx("Max", cast="out"),
    "minimum": Onnx("Min", cast="out"),
    "where": _where,
    "clip": _clip,
    "cast": _cast,
    "clone": Onnx("Identity"),
    "fill_like": _fill_like,
    "stop_gradient": Onnx("Identity"),
    "erf": Onnx("Erf"),
    # shapes
    "reshape": _reshape,
    "reshape_like": _reshape_like,
    "permute": Onnx("Transpose", {"perm": "dims"}),
    "expand": _expand,
    "broadcast_to_like": _broadcast_to_like,
    "unsqueeze": _unsqueeze,
    "squeeze": _squeeze,
    "concat": _concat,
    # reductions
    "sum": _sum,
    "sum_to_like": _sum_to_like,
    "amax": _extreme("ReduceMax"),
    "amin": _extreme("ReduceMin"),
    "argmax": _arg("ArgMax"),
    "argmin": _arg("ArgMin"),
    "count": _count,
    "log_softmax": Onnx("LogSoftmax", {"axis": "dim"}),
    # indexing, linear algebra, windows
    "getitem": _getitem,
    "matmul": Onnx("MatMul", cast="out"),
    "unfold2d": _unfold2d,
    "one_hot": _one_hot,
    # control flow
    "cond": _control("cond"),
    "while_loop": _control("while"),
    "tuple_get": _tuple_get,
}

NOT_EXPORTABLE: dict = {
    "getitem_grad": "a gradient op (scatter-add): export the forward computation",
    "fold2d": "a gradient op (col2im): export the forward computation",
    "dropout_mask": "random: export the model in eval mode, where dropout is the identity",
    "assign": "a state update: export an inference function, not a training step",
    "group": "groups state updates: export an inference function, not a training step",
    "tf_random": "random (compat.v1's draws): ONNX's random ops cannot reproduce the generator",
}


def rule_for(op) -> tuple:
    """(rule, None) for an exportable op, (None, reason) otherwise: the tables here first, then
    the op record's own `onnx` (an ONNX op type, an `Onnx` record or a rule) / `onnx_reason`."""
    if op.name in OP_EXPORTS:
        return OP_EXPORTS[op.name], None
    if op.name in NOT_EXPORTABLE:
        return None, NOT_EXPORTABLE[op.name]
    declared = getattr(op, "onnx", None)
    if isinstance(declared, str):
        return Onnx(declared), None
    if declared is not None:
        return declared, None
    return None, getattr(op, "onnx_reason", None) or "no ONNX export is declared for it"
