"""ONNX export rules of the elementwise, shape and reduction ops, declared on their records
(``define(..., onnx=rule)``); sources, control flow and indexing are in `onnx_graph_rules`.

A rule is ``rule(e, node, ins) -> name``: `e` is the exporter's `Emitter` (nodes, constants,
casts, ``e.error`` for an export error), `node` the dongjing graph node, `ins` the ONNX names of
its inputs. Constants are given as Python values (``e.const(value, dtype)``, ``e.int64(k)``,
``e.ints([...])``): ONNX tensors are host arrays, and the exporter makes them. Nothing here
imports the onnx package, `dongjing.onnx` or an array library; the exporter calls these only
while exporting.
"""

from __future__ import annotations

import math

from .. import dtypes


# --- helpers the rules share -------------------------------------------------------------
def in_dtype(node, i: int):
    """The dtype of the node's `i`-th input."""
    return node.inputs[i].dtype


def reduce_node(e, op_type: str, x: str, axes, keepdims: int, **attrs) -> str:
    """A Reduce* node; axes moved from attribute to input in opset 13 (Sum) / 18 (the rest)."""
    input_since = 13 if op_type == "ReduceSum" else 18
    if axes is None:
        return e.node(op_type, [x], keepdims=keepdims, **attrs)
    axes = [axes] if isinstance(axes, int) else list(axes)
    if e.opset >= input_since:
        return e.node(op_type, [x, e.ints(axes, "axes")], keepdims=keepdims, **attrs)
    return e.node(op_type, [x], axes=axes, keepdims=keepdims, **attrs)


def scalar(e, value, dtype, name="scalar") -> str:
    """A 0-d constant of `dtype`."""
    return e.const(value, dtype, name=name)


def _keepdim(node) -> int:
    return int(node.attrs.get("keepdim", False))


# --- elementwise -------------------------------------------------------------------------
def not_equal(e, node, ins):
    """ne: Not(Equal) on the inputs cast to their promoted dtype."""
    common = dtypes.promote(in_dtype(node, 0), in_dtype(node, 1))
    a, b = (e.cast(n, in_dtype(node, i), common) for i, n in enumerate(ins))
    return e.node("Not", [e.node("Equal", [a, b], name=node.name + "_eq")])


def pow_scalar(e, node, ins):
    """x ** c: Pow with the exponent as a constant of the output dtype."""
    x = e.cast(ins[0], in_dtype(node, 0), node.dtype)
    return e.node("Pow", [x, scalar(e, node.attrs["exponent"], node.dtype, "exponent")])


def relu_backward(e, node, ins):
    """0 where x <= 0, else g."""
    g, x = ins
    off = e.node("LessOrEqual", [x, scalar(e, 0, in_dtype(node, 1), "zero")],
                 name=node.name + "_off")
    return e.node("Where", [off, scalar(e, 0, node.dtype, "zero_grad"),
                            e.cast(g, in_dtype(node, 0), node.dtype)])


def tanh_backward(e, node, ins):
    """g * (1 - y * y)."""
    g, y = (e.cast(n, in_dtype(node, i), node.dtype) for i, n in enumerate(ins))
    one_minus = e.node("Sub", [scalar(e, 1, node.dtype, "one"), e.node("Mul", [y, y])])
    return e.node("Mul", [g, one_minus])


def where(e, node, ins):
    """Where with both branches cast to the output dtype."""
    c, a, b = ins
    return e.node("Where", [c, e.cast(a, in_dtype(node, 1), node.dtype),
                            e.cast(b, in_dtype(node, 2), node.dtype)])


def clip(e, node, ins):
    """Clip with its bounds as constants ("" for a missing one)."""
    bounds = [scalar(e, node.attrs[k], node.dtype, k) if node.attrs.get(k) is not None else ""
              for k in ("min", "max")]
    return e.node("Clip", [ins[0]] + bounds)


def cast(e, node, ins):
    """Cast (Identity when the dtype does not change)."""
    if in_dtype(node, 0) == node.dtype:
        return e.node("Identity", ins)
    return e.cast(ins[0], in_dtype(node, 0), node.dtype)


def fill_like(e, node, ins):
    """ConstantOfShape of the input's Shape."""
    return e.node("ConstantOfShape", [e.node("Shape", ins, name=node.name + "_shape")],
                  value=e.tensor([node.attrs["value"]], node.dtype))


def same_if_integer(op_type):
    """Rounding ops: the ONNX op on floats, Identity on integers (already whole)."""

    def rule(e, node, ins):
        if node.inputs[0].dtype.kind != "f":
            return e.node("Identity", ins)
        decimals = node.attrs.get("decimals", 0)
        if not decimals:
            return e.node(op_type, ins)
        scale = scalar(e, 10.0 ** decimals, node.dtype, "scale")
        scaled = e.node("Mul", [ins[0], scale], name=node.name + "_scaled")
        return e.node("Div", [e.node(op_type, [scaled], name=node.name + "_rounded"), scale])

    return rule


def remainder(e, node, ins):
    """Python-sign remainder: Mod (fmod=0) for integers, a - b * floor(a / b) for floats."""
    a, b = (e.cast(n, i.dtype, node.dtype) for n, i in zip(ins, node.inputs))
    if node.dtype.kind != "f":
        return e.node("Mod", [a, b], fmod=0)
    floor = e.node("Floor", [e.node("Div", [a, b], name=node.name + "_q")],
                   name=node.name + "_floor")
    return e.node("Sub", [a, e.node("Mul", [b, floor], name=node.name + "_bq")])


# --- shapes ------------------------------------------------------------------------------
def reshape(e, node, ins):
    """Reshape to the static target (allowzero when it has a zero-size dim)."""
    shape = node.attrs["shape"]
    zero = any(d == 0 for d in shape)  # a literal 0 is a size, not "copy this dim"
    if zero and e.opset < 14:
        raise e.error(f"reshape to {shape} (a zero-size dim) needs opset 14 or newer")
    return e.node("Reshape", [ins[0], e.ints(shape, "shape")], allowzero=1 if zero else None)


def reshape_like(e, node, ins):
    """Reshape to the second input's Shape."""
    return e.node("Reshape", [ins[0], e.node("Shape", [ins[1]], name=node.name + "_shape")])


def expand(e, node, ins):
    """Expand to the target shape."""
    # Expand broadcasts both ways, so a dim of 1 in the target keeps the input's dim (-1)
    shape = [1 if d == -1 else d for d in node.attrs["shape"]]
    return e.node("Expand", [ins[0], e.ints(shape, "shape")])


def broadcast_to_like(e, node, ins):
    """Expand to the second input's Shape."""
    return e.node("Expand", [ins[0], e.node("Shape", [ins[1]], name=node.name + "_shape")])


def unsqueeze(e, node, ins):
    """Unsqueeze with the axes as an input."""
    return e.node("Unsqueeze", [ins[0], e.ints([node.attrs["dim"]], "axes")])


def squeeze(e, node, ins):
    """Squeeze with the axes as an input."""
    return e.node("Squeeze", [ins[0], e.ints(node.attrs["dim"], "axes")])


def concat(e, node, ins):
    """Concat of the inputs cast to the output dtype."""
    ins = [e.cast(n, in_dtype(node, i), node.dtype) for i, n in enumerate(ins)]
    return e.node("Concat", ins, axis=node.attrs["dim"])


# --- reductions --------------------------------------------------------------------------
def reduce_sum(e, node, ins):
    """sum: ReduceSum of the input cast to the output dtype."""
    x = e.cast(ins[0], in_dtype(node, 0), node.dtype)
    return reduce_node(e, "ReduceSum", x, node.attrs.get("dim"), _keepdim(node))


def sum_to_like(e, node, ins):
    """`g` summed over the dims broadcasting stretched: decided now when both shapes are known,
    else at run time (the axes computed from the two Shapes)."""
    g, like = node.inputs
    lead = len(g.shape) - len(like.shape)
    if None not in g.shape and None not in like.shape:
        axes = list(range(lead)) + [lead + i for i, d in enumerate(like.shape)
                                    if d == 1 and g.shape[lead + i] != 1]
        if not axes:
            return e.node("Identity", [ins[0]])
        summed = reduce_node(e, "ReduceSum", ins[0], axes, 1, name=node.name + "_sum")
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


def extreme(op_type):
    """amax / amin: ReduceMax / ReduceMin over `dim`."""

    def rule(e, node, ins):
        return reduce_node(e, op_type, ins[0], node.attrs.get("dim"), _keepdim(node))

    return rule


def reduce_rule(op_type):
    """prod (ReduceProd) and the 2-norm (ReduceL2), with the output dtype of the op."""

    def rule(e, node, ins):
        x = e.cast(ins[0], node.inputs[0].dtype, node.dtype)
        return reduce_node(e, op_type, x, node.attrs.get("dim"), _keepdim(node))

    return rule


def arg(op_type):
    """argmax / argmin: ArgMax / ArgMin along `dim`, or over the flattened input."""

    def rule(e, node, ins):
        dim, keepdim = node.attrs.get("dim"), _keepdim(node)
        if dim is not None:
            return e.node(op_type, ins, axis=dim, keepdims=keepdim)
        flat = e.node("Reshape", [ins[0], e.ints([-1], "shape")], name=node.name + "_flat")
        out = e.node(op_type, [flat], axis=0, keepdims=0, name=node.name + "_flat_index")
        shape = [1] * len(node.inputs[0].shape) if keepdim else []
        return e.node("Reshape", [out, e.ints(shape, "shape")])

    return rule


def count(e, node, ins):
    """The number of elements reduced: a constant when the dims are known, else from Shape."""
    x = node.inputs[0]
    axes = range(len(x.shape)) if node.attrs.get("dim") is None else node.attrs["dim"]
    sizes = [x.shape[a] for a in axes]
    if all(d is not None for d in sizes):  # known now: a constant
        return scalar(e, math.prod(sizes), node.dtype, node.name)
    shape = e.node("Shape", ins, name=node.name + "_shape")
    picked = e.node("Gather", [shape, e.ints(list(axes), "dims")], name=node.name + "_dims")
    n = reduce_node(e, "ReduceProd", picked, None, 0, name=node.name + "_n")
    return e.cast(n, dtypes.int64, node.dtype)


def cumsum(e, node, ins):
    """CumSum along `dim` (reverse when asked)."""
    x = e.cast(ins[0], node.inputs[0].dtype, node.dtype)
    return e.node("CumSum", [x, e.int64(node.attrs["dim"], "axis")],
                  reverse=int(node.attrs.get("reverse", False)))


# --- gather / scatter, triangles, sorting, einsum (issue 12's ops) -----------------------
def gather(e, node, ins):
    """GatherElements along `dim`."""
    return e.node("GatherElements", ins, axis=node.attrs["dim"])


def scatter(reduction):
    """ScatterElements with `reduction` (None: replace), `src` trimmed to the index's shape."""

    def rule(e, node, ins):
        x, index, src = ins
        x = e.cast(x, node.inputs[0].dtype, node.dtype)
        src = e.cast(src, node.inputs[2].dtype, node.dtype)
        if tuple(node.inputs[2].shape) != tuple(node.inputs[1].shape):
            src = e.node("Slice", [src, e.ints([0] * len(node.inputs[1].shape), "starts"),
                                   e.node("Shape", [index], name=node.name + "_index_shape")],
                         name=node.name + "_src")
        return e.node("ScatterElements", [x, index, src], axis=node.attrs["dim"],
                      reduction=reduction)

    return rule


def triangle(upper: int):
    """tril / triu: Trilu with the diagonal offset as an input."""

    def rule(e, node, ins):
        k = e.int64(node.attrs.get("diagonal", 0), "k")
        return e.node("Trilu", [ins[0], k], upper=upper)

    return rule


def topk(e, node, ins):
    """The indices output of TopK (dongjing gathers the values separately)."""
    k = e.ints([node.attrs["k"]], "k")
    _, indices = e.node("TopK", [ins[0], k], n_out=2, axis=node.attrs["dim"],
                        largest=int(node.attrs.get("largest", True)), sorted=1)
    return indices


def argsort(e, node, ins):
    """A full-length TopK (ties keep the lower index first, like dongjing's stable sort)."""
    dim = node.attrs["dim"]
    size = e.node("Gather", [e.node("Shape", [ins[0]], name=node.name + "_shape"),
                             e.ints([dim], "dim")], name=node.name + "_size")
    _, indices = e.node("TopK", [ins[0], size], n_out=2, axis=dim,
                        largest=int(node.attrs.get("descending", False)), sorted=1)
    return indices


def einsum(e, node, ins):
    """Einsum of the inputs cast to the output dtype."""
    dtype = node.dtype
    ins = [e.cast(n, i.dtype, dtype) for n, i in zip(ins, node.inputs)]
    return e.node("Einsum", ins, equation=",".join(node.attrs["ins"]) + "->" + node.attrs["out"])
