"""ONNX If and Loop as `dj.cond` and `dj.while_loop` (bodies run by the same interpreter, reading
outer values by name)."""

from __future__ import annotations

import numpy as np

from .. import ops
from ..ops.control import cond, while_loop
from ..tensor import Tensor
from .errors import OnnxImportError
from .import_ops import HAND_WRITTEN
from .importer import Context, run_graph


def _child(ctx):

    child = Context(ctx.opset, ctx.subgraph_constants, ctx.base_dir)
    child.static_names = set(ctx.static_names)
    child.marked = ctx.marked
    return child


def import_if(ctx, ins: list, attrs: dict) -> list:
    """`dj.cond` over the two branch graphs."""
    env = ctx.env

    def branch(graph):
        return lambda: list(run_graph(_child(ctx), graph, dict(env)))

    pred = ins[0]
    if pred.dtype.kind != "b":
        pred = ops.cast(pred, np.bool_)
    return list(cond(pred, branch(attrs["then_branch"]), branch(attrs["else_branch"])))


def import_loop(ctx, ins: list, attrs: dict) -> list:
    """`dj.while_loop` over (iteration, condition, loop-carried values...)."""
    body, env = attrs["body"], ctx.env
    trip, keep_going, init = ins[0], ins[1] if len(ins) > 1 else None, ins[2:]
    n = len(init)
    if len(body.output) != n + 1:
        raise OnnxImportError("scan outputs (body outputs beyond the loop-carried values) are "
                              "not supported")
    limit = None
    if trip is not None and (trip._node is None or trip._node.op.name == "constant"):
        limit = int(np.asarray(ctx.static(trip, "M")).reshape(()))
    first = Tensor._make(np.array(True)) if keep_going is None else ops.reshape(
        ops.cast(keep_going, np.bool_), ())
    names = [i.name for i in body.input]

    def test(i, c, *values):
        return c if trip is None else ops.logical_and(c, i < ops.reshape(trip, ()))

    def step(i, c, *values):
        scope = dict(env)
        scope.update(zip(names, [i, c] + list(values)))
        outs = run_graph(_child(ctx), body, scope)
        return [i + 1, ops.reshape(ops.cast(outs[0], np.bool_), ())] + list(outs[1:])

    start = Tensor._make(np.array(0, np.int64))
    final = while_loop(test, step, [start, first] + list(init), maximum_iterations=limit)
    return list(final[2:])


HAND_WRITTEN.update({"If": import_if, "Loop": import_loop})  # If and Loop need the importer
