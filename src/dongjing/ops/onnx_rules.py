"""ONNX export rules for issue 12's ops, declared on their records (``define(..., onnx=rule)``).

A rule is ``rule(e, node, ins) -> name``: `e` is the exporter's `Emitter` (nodes, constants,
casts), `node` the dongjing graph node, `ins` the ONNX names of its inputs. Nothing here imports
the onnx package; the exporter calls these only while exporting.
"""

from __future__ import annotations

import numpy as np


def _reduce(e, op_type, x, axes, keepdims):
    """A Reduce* node (axes an input from opset 18, an attribute before)."""
    if axes is None:
        return e.node(op_type, [x], keepdims=keepdims)
    axes = [axes] if isinstance(axes, int) else list(axes)
    if e.opset >= 18:
        return e.node(op_type, [x, e.ints(axes, "axes")], keepdims=keepdims)
    return e.node(op_type, [x], axes=list(axes), keepdims=keepdims)


def same_if_integer(op_type):
    """Rounding ops: the ONNX op on floats, Identity on integers (already whole)."""

    def rule(e, node, ins):
        if node.inputs[0].dtype.kind != "f":
            return e.node("Identity", ins)
        decimals = node.attrs.get("decimals", 0)
        if not decimals:
            return e.node(op_type, ins)
        scale = e.const(np.asarray(10.0 ** decimals, dtype=node.dtype), name="scale")
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


def reduce_rule(op_type):
    """prod (ReduceProd) and the 2-norm (ReduceL2), with the output dtype of the op."""

    def rule(e, node, ins):
        x = e.cast(ins[0], node.inputs[0].dtype, node.dtype)
        return _reduce(e, op_type, x, node.attrs.get("dim"), int(node.attrs.get("keepdim",
                                                                                  False)))

    return rule


def cumsum(e, node, ins):
    x = e.cast(ins[0], node.inputs[0].dtype, node.dtype)
    return e.node("CumSum", [x, e.const(np.int64(node.attrs["dim"]), name="axis")],
                  reverse=int(node.attrs.get("reverse", False)))


def gather(e, node, ins):
    return e.node("GatherElements", ins, axis=node.attrs["dim"])


def scatter(reduction):
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
    def rule(e, node, ins):
        k = e.const(np.int64(node.attrs.get("diagonal", 0)), name="k")
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
    dtype = node.dtype
    ins = [e.cast(n, i.dtype, dtype) for n, i in zip(ins, node.inputs)]
    return e.node("Einsum", ins, equation=",".join(node.attrs["ins"]) + "->" + node.attrs["out"])
