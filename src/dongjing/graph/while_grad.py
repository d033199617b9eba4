"""Gradients through `while_loop` without a bound, as TensorFlow does: a recording run of the
loop stacks each iteration's entry values (the stack is as long as the loop actually ran), then
one op walks the stack backwards through the body's gradient sub-graph, accumulating the
gradients of the values the body captured. Memory grows with the iterations run."""

from __future__ import annotations

import numpy as np

from ..errors import GraphError
from ..ops.registry import Spec, register


def _program(sub):
    from ..runtime.interpreter import subgraph_program

    return subgraph_program(sub)


def _record_forward(*arrays, cond_graph, body_graph, n_vars, maximum_iterations, out_specs):
    values = list(arrays[:n_vars])
    n_cond = len(cond_graph.captures)
    cond_caps = list(arrays[n_vars:n_vars + n_cond])
    body_caps = list(arrays[n_vars + n_cond:])
    test, step = _program(cond_graph), _program(body_graph)
    history: list = [[] for _ in range(n_vars)]
    steps = 0
    while maximum_iterations is None or steps < maximum_iterations:
        if not test(values + cond_caps)[0]:
            break
        for stack, value in zip(history, values):
            stack.append(value)
        values = step(values + body_caps)
        steps += 1
    return tuple(np.stack(stack) if stack else np.zeros((0,) + np.shape(v), np.asarray(v).dtype)
                 for stack, v in zip(history, arrays[:n_vars]))


def _grad_forward(*arrays, grad_graph, n_vars, n_diff, cap_index, out_specs):
    stacks = arrays[:n_vars]
    grads = list(arrays[n_vars:n_vars + n_diff])
    captures = list(arrays[n_vars + n_diff:])
    run = _program(grad_graph)
    acc: list = [None] * len(cap_index)
    for k in range(stacks[0].shape[0] - 1, -1, -1):
        outs = run([s[k] for s in stacks] + grads + captures)
        grads = outs[:n_diff]
        for i, part in enumerate(outs[n_diff:]):
            acc[i] = part if acc[i] is None else acc[i] + part
    for i, c in enumerate(cap_index):  # a loop that ran no iteration: zero gradients
        if acc[i] is None:
            acc[i] = np.zeros_like(captures[c])
    return tuple(np.asarray(g) for g in grads) + tuple(np.asarray(a) for a in acc)


def _no_second_order(*args):
    raise GraphError("dj.gradients of a gradient through a dj.while_loop without "
                     "maximum_iterations is not supported (give the loop a bound)")


_record = register("while_record", forward=_record_forward,
                   infer=lambda *s, **a: ((), None), vjp=_no_second_order, kind="control")
_grad = register("while_grad", forward=_grad_forward, infer=lambda *s, **a: ((), None),
                 vjp=_no_second_order, kind="control")


def _outputs(node, specs) -> list:
    from ..dispatch import apply
    from ..ops.registry import get
    from ..tensor import Tensor

    return [apply(get("tuple_get"), Tensor._symbolic(node), index=i, shape=s.shape, dtype=s.dtype)
            for i, s in enumerate(specs)]


def while_vjp(g, inputs, out, needs, attrs) -> tuple:
    """The vjp of a while_loop node (any bound), by recording and a reverse loop."""
    from ..dispatch import apply
    from ..ops import zeros_like
    from . import builder
    from .gradients import gradients
    from .subgraph import inline, trace

    n = attrs["n_vars"]
    cond_graph, body_graph = attrs["cond_graph"], attrs["body_graph"]
    n_cond = len(cond_graph.captures)
    init, body_caps = inputs[:n], inputs[n + n_cond:]
    diff = [j for j in range(n) if init[j].dtype.kind == "f"]
    caps_diff = [j for j, c in enumerate(body_caps)
                 if c.dtype.kind == "f" and needs[n + n_cond + j]]
    if not diff or (not caps_diff and not any(needs[j] for j in diff)):
        return (None,) * len(inputs)
    parent = builder.state.graph
    specs = [Spec((None,) + tuple(t.shape), t.dtype) for t in init]
    record = apply(_record, *inputs, cond_graph=cond_graph, body_graph=body_graph, n_vars=n,
                   maximum_iterations=attrs["maximum_iterations"], out_specs=specs)._node
    stacks = _outputs(record, specs)

    def body_grad(*params):
        values, gs = list(params[:n]), list(params[n:])
        caps = [_local(c) for c in body_caps]
        outs = inline(body_graph, values + caps)
        xs = [values[j] for j in diff] + [caps[j] for j in caps_diff]
        grads = gradients([outs[j] for j in diff], xs, grad_ys=gs)
        return [gr if gr is not None else zeros_like(x) for gr, x in zip(grads, xs)]

    args = [(t.shape, t.dtype, f"loop_var_{j}") for j, t in enumerate(init)]
    args += [(init[j].shape, init[j].dtype, f"grad_{j}") for j in diff]
    grad_graph, _ = trace(body_grad, args, parent, "while_body_grad")
    seeds = [g[j] if g[j] is not None else zeros_like(init[j]) for j in diff]
    out_specs = [Spec(tuple(init[j].shape), init[j].dtype) for j in diff]
    out_specs += [Spec(tuple(body_caps[j].shape), body_caps[j].dtype) for j in caps_diff]
    from ..tensor import Tensor

    captured = [Tensor._symbolic(c) for c in grad_graph.captures]
    cap_index = tuple(grad_graph.captures.index(body_caps[j]._node) for j in caps_diff)
    node = apply(_grad, *stacks, *seeds, *captured, grad_graph=grad_graph, n_vars=n,
                 n_diff=len(diff), cap_index=cap_index, out_specs=out_specs)._node
    results = _outputs(node, out_specs)
    grads: list = [None] * len(inputs)
    for k, j in enumerate(diff):
        if needs[j]:
            grads[j] = results[k]
    for k, j in enumerate(caps_diff):
        grads[n + n_cond + j] = results[len(diff) + k]
    return tuple(grads)


def _local(t):
    from ..tensor import Tensor
    from . import builder

    return Tensor._symbolic(builder.to_node(builder.state.graph, t))
