"""Export of control flow: `dj.cond` -> If, `dj.while_loop` -> Loop (sub-graphs become bodies
that read captured outer values by name, as ONNX scoping allows)."""

from __future__ import annotations

import numpy as np

from ..runtime.interpreter import needed_nodes
from .emitter import Emitter, value_info
from .exporter import emit_nodes


def _needed(sub) -> list:
    return needed_nodes(sub.outputs, set(sub.args))


def _bind_and_emit(e: Emitter, sub, explicit: list, captures: list) -> list:
    """Emit `sub`'s nodes into `e` with its args bound to ONNX names; its outputs' names."""
    bound = explicit + captures
    for arg, name in zip(sub.args, bound):
        e.values[arg] = name
    emit_nodes(e, _needed(sub))
    return [e.values[o] for o in sub.outputs]


def _scalar_bool(e: Emitter, name: str) -> str:
    """A one-element bool as a 0-d tensor (what Loop's condition must be)."""
    return e.node("Reshape", [name, e.ints([], "scalar_shape")], name="cond")


def _finish(child: Emitter, names: list, specs: list, graph_name: str):
    outputs = []
    for name, (shape, dtype) in zip(names, specs):
        out = child.node("Identity", [name], name=f"{graph_name}_out")
        outputs.append(value_info(out, dtype, shape))
    return child.graph(graph_name, outputs)


def _branch(e: Emitter, sub, outer: list):
    child = Emitter(e.opset, prefix=f"{e.prefix}{sub.name}/", parent=e)
    names = _bind_and_emit(child, sub, [], outer)
    return _finish(child, names, [(o.shape, o.dtype) for o in sub.outputs], sub.name)


def export_cond(e: Emitter, node, ins: list) -> list:
    """`cond(pred, *captures)` as an ONNX If whose branches read the captures from outside."""
    pred, caps = ins[0], ins[1:]
    true_graph, false_graph = node.attrs["true_graph"], node.attrs["false_graph"]
    n_true = len(true_graph.captures)
    then_branch = _branch(e, true_graph, caps[:n_true])
    else_branch = _branch(e, false_graph, caps[n_true:])
    n = len(node.attrs["out_specs"])
    outs = e.node("If", [pred], n_out=n, then_branch=then_branch, else_branch=else_branch)
    return outs if n > 1 else [outs]


def export_while(e: Emitter, node, ins: list) -> list:
    """`while_loop` as an ONNX Loop: the first test runs before it, the body runs the step and
    then the next test (Loop's body returns the condition for the next iteration)."""
    n = node.attrs["n_vars"]
    cond_graph, body_graph = node.attrs["cond_graph"], node.attrs["body_graph"]
    n_cond = len(cond_graph.captures)
    init, cond_caps, body_caps = ins[:n], ins[n:n + n_cond], ins[n + n_cond:]
    saved = e.prefix
    e.prefix = f"{saved}{cond_graph.name}/"
    (first,) = _bind_and_emit(e, cond_graph, init, cond_caps)
    first = _scalar_bool(e, first)
    e.prefix = saved

    body = Emitter(e.opset, prefix=f"{e.prefix}{body_graph.name}/", parent=e)
    iteration, cond_in = body.fresh("iteration"), body.fresh("cond_in")
    body.inputs.append(value_info(iteration, np.int64, ()))
    body.inputs.append(value_info(cond_in, np.bool_, ()))
    carried = []
    for i, spec in enumerate(node.attrs["out_specs"]):
        name = body.fresh(f"loop_var_{i}")
        body.inputs.append(value_info(name, spec.dtype, spec.shape))
        carried.append(name)
    new = _bind_and_emit(body, body_graph, carried, body_caps)
    (test,) = _bind_and_emit(body, cond_graph, new, cond_caps)
    test = _scalar_bool(body, test)
    specs = [((), np.bool_)] + [(o.shape, o.dtype) for o in body_graph.outputs]
    graph = _finish(body, [test] + new, specs, body_graph.name)

    limit = node.attrs["maximum_iterations"]
    trip = "" if limit is None else e.const(np.asarray(limit, np.int64), name="max_iterations")
    outs = e.node("Loop", [trip, first] + list(init), n_out=n, body=graph)
    return outs if n > 1 else [outs]


Emitter.cond = export_cond  # `dj.cond` exported as an If whose branches are sub-graphs
Emitter.loop = export_while  # `dj.while_loop` exported as a Loop whose body is a sub-graph
