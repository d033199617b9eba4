"""Gradients through `while_loop` without a bound, as TensorFlow does: a recording run of the
loop stacks each iteration's entry values (the stack is as long as the loop actually ran), then
one op walks the stack backwards through the body's gradient sub-graph, accumulating the
gradients of the values the body captured. Memory grows with the iterations run. The stacks and
accumulators are arrays of the loop values' backend (`xp`)."""

from __future__ import annotations

from ..backends import backend_of, default_backend
from ..core import late
from ..dispatch import apply
from ..dtypes import is_floating
from ..errors import GraphError
from ..graph import builder
from ..graph.gradients import gradients
from ..tensor import Tensor
from .elementwise import zeros_like
from .registry import Kind, Spec, define, get
from .subgraph import inline, trace


def _program(sub, arrays=()):
    return late.subgraph_program(sub, arrays)  # the runtime sits above: a late slot


def _record_forward(xp, *arrays, cond_graph, body_graph, n_vars, maximum_iterations, out_specs,
                    with_finals: bool = False):
    values = list(arrays[:n_vars])
    n_cond = len(cond_graph.captures)
    cond_caps = list(arrays[n_vars:n_vars + n_cond])
    body_caps = list(arrays[n_vars + n_cond:])
    test, step = _program(cond_graph, arrays), _program(body_graph, arrays)
    history: list = [[] for _ in range(n_vars)]
    steps = 0
    while maximum_iterations is None or steps < maximum_iterations:
        if not test(values + cond_caps)[0]:
            break
        for stack, value in zip(history, values):
            stack.append(value)
        values = step(values + body_caps)
        steps += 1
    stacks = tuple(stack_history(stack, v) for stack, v in zip(history, arrays[:n_vars]))
    return stacks + tuple(values) if with_finals else stacks


def stack_history(history: list, init):
    """One loop value's stack: the entry values `history` saved, or, for a loop that ran no
    iteration, 0 entries shaped like its initial value `init`."""
    xp = backend_of(init, default_backend()).xp
    if history:
        return xp.stack(history)
    init = xp.asarray(init)
    return xp.zeros((0,) + tuple(init.shape), init.dtype)


def new_stack(xp, init, capacity: int, shape: tuple, dtype):
    """An empty stack of `capacity` entries of (shape, dtype) in the program's array module
    `xp`, entry 0 = `init` (which may be a host constant: the stack is on the device)."""
    stack = xp.empty((capacity,) + shape, dtype)
    stack[0] = init
    return stack


def grow_stack(stack, capacity: int):
    """`stack`'s entries at the start of a new stack of `capacity` entries."""
    xp = backend_of(stack, default_backend()).xp
    new = xp.empty((capacity,) + stack.shape[1:], stack.dtype)
    new[:len(stack)] = stack
    return new


def pair(xp, shape: tuple, dtype):
    """Two arrays of (shape, dtype) that a generated loop writes in turn, in the program's
    array module `xp` (a GPU program's loop values stay on the GPU)."""
    return xp.empty((2,) + shape, dtype)


def accumulator(like):
    """Zeros shaped like a captured value: the sum of its gradient parts starts here."""
    return backend_of(like, default_backend()).xp.zeros_like(like)


def _grad_forward(xp, *arrays, grad_graph, n_vars, n_diff, cap_index, out_specs):
    stacks = arrays[:n_vars]
    grads = list(arrays[n_vars:n_vars + n_diff])
    finals = list(arrays[n_vars + n_diff:2 * n_vars + n_diff])
    captures = list(arrays[2 * n_vars + n_diff:])
    run = _program(grad_graph, arrays)
    acc: list = [None] * len(cap_index)
    n_steps = stacks[0].shape[0]
    for k in range(n_steps - 1, -1, -1):
        exits = finals if k == n_steps - 1 else [s[k + 1] for s in stacks]
        outs = run([s[k] for s in stacks] + grads + exits + captures)
        grads = outs[:n_diff]
        for i, part in enumerate(outs[n_diff:]):
            if acc[i] is None:
                acc[i] = xp.array(part)  # our own storage, summed into in place
            else:
                xp.add(acc[i], part, out=acc[i], casting="unsafe")
    for i, c in enumerate(cap_index):  # a loop that ran no iteration: zero gradients
        if acc[i] is None:
            acc[i] = xp.zeros_like(captures[c])
    return tuple(xp.asarray(g) for g in grads) + tuple(xp.asarray(a) for a in acc)


def _no_second_order(*args):
    raise GraphError("dj.gradients of a gradient through a dj.while_loop without "
                     "maximum_iterations is not supported (give the loop a bound)")


_record = define("while_record", forward=_record_forward, infer=lambda *s, **a: ((), None),
                 vjp=_no_second_order, kind=Kind.CONTROL,
                 onnx_reason="a gradient op: export differentiates before export")
_grad = define("while_grad", forward=_grad_forward, infer=lambda *s, **a: ((), None),
               vjp=_no_second_order, kind=Kind.CONTROL,
               onnx_reason="a gradient op: export differentiates before export")


def _outputs(node, specs) -> list:
    return [apply(get("tuple_get"), Tensor._symbolic(node), index=i, shape=s.shape, dtype=s.dtype)
            for i, s in enumerate(specs)]


def while_vjp(g, inputs, out, needs, attrs) -> tuple:
    """The vjp of a while_loop node (any bound), by recording and a reverse loop."""

    n = attrs["n_vars"]
    cond_graph, body_graph = attrs["cond_graph"], attrs["body_graph"]
    n_cond = len(cond_graph.captures)
    init, body_caps = inputs[:n], inputs[n + n_cond:]
    diff = [j for j in range(n) if is_floating(init[j].dtype)]
    caps_diff = [j for j, c in enumerate(body_caps)
                 if is_floating(c.dtype) and needs[n + n_cond + j]]
    if not diff or (not caps_diff and not any(needs[j] for j in diff)):
        return (None,) * len(inputs)
    parent = builder.state.graph
    specs = [Spec((None,) + tuple(t.shape), t.dtype) for t in init]
    record = apply(_record, *inputs, cond_graph=cond_graph, body_graph=body_graph, n_vars=n,
                   maximum_iterations=attrs["maximum_iterations"], out_specs=specs)._node
    stacks = _outputs(record, specs)

    forward_outs: list = []

    def body_grad(*params):
        values, gs = list(params[:n]), list(params[n:n + len(diff)])
        caps = [_local(c) for c in body_caps]
        outs = inline(body_graph, values + caps)
        forward_outs.extend(outs)
        xs = [values[j] for j in diff] + [caps[j] for j in caps_diff]
        grads = gradients([outs[j] for j in diff], xs, grad_ys=gs)
        return [gr if gr is not None else zeros_like(x) for gr, x in zip(grads, xs)]

    args = [(t.shape, t.dtype, f"loop_var_{j}") for j, t in enumerate(init)]
    args += [(init[j].shape, init[j].dtype, f"grad_{j}") for j in diff]
    args += [(t.shape, t.dtype, f"loop_exit_{j}") for j, t in enumerate(init)]
    grad_graph, _ = trace(body_grad, args, parent, "while_body_grad")
    _read_exits(grad_graph, forward_outs, grad_graph.args[n + len(diff):2 * n + len(diff)])
    finals = _outputs(out._node, attrs["out_specs"])
    seeds = [g[j] if g[j] is not None else zeros_like(init[j]) for j in diff]
    out_specs = [Spec(tuple(init[j].shape), init[j].dtype) for j in diff]
    out_specs += [Spec(tuple(body_caps[j].shape), body_caps[j].dtype) for j in caps_diff]

    captured = [Tensor._symbolic(c) for c in grad_graph.captures]
    cap_index = tuple(grad_graph.captures.index(body_caps[j]._node) for j in caps_diff)
    node = apply(_grad, *stacks, *seeds, *finals, *captured, grad_graph=grad_graph, n_vars=n,
                 n_diff=len(diff), cap_index=cap_index, out_specs=out_specs)._node
    results = _outputs(node, out_specs)
    grads: list = [None] * len(inputs)
    for k, j in enumerate(diff):
        if needs[j]:
            grads[j] = results[k]
    for k, j in enumerate(caps_diff):
        grads[n + n_cond + j] = results[len(diff) + k]
    return tuple(grads)


def _read_exits(grad_graph, forward_outs: list, exit_args: list) -> None:
    """Let the gradient sub-graph read each iteration's results (recorded: the next iteration's
    entry values) instead of recomputing them: e.g. tanh's gradient reads tanh's output. What
    only computed them becomes dead code."""
    swap = {t._node: a for t, a in zip(forward_outs, exit_args) if t._node.op.name != "arg"}
    if not swap:
        return
    for node in grad_graph.nodes:
        if any(i in swap for i in node.inputs):
            node.inputs = tuple(swap.get(i, i) for i in node.inputs)
    grad_graph.outputs = [swap.get(o, o) for o in grad_graph.outputs]
    grad_graph.version += 1


def _local(t):
    return Tensor._symbolic(builder.to_node(builder.state.graph, t))
