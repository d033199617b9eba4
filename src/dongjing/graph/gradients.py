"""Symbolic reverse mode: `dj.gradients` adds gradient nodes by calling each node's vjp, the same
rules the eager tape runs, so there is no second set of derivative formulas."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..backends import default_backend
from ..core import autocast_state, late
from ..core.placement_scope import on_rank
from ..core.registry import Kind
from ..dtypes import is_floating
from ..errors import GraphError
from ..tensor import Tensor


def _as_list(value) -> tuple[list, bool]:
    if isinstance(value, (list, tuple)):
        return list(value), True
    return [value], False


def _node_in(graph, t, what: str):
    """The node of `graph` standing for `t`, or None when `t` is not part of it."""
    if not isinstance(t, Tensor):
        raise GraphError(f"dj.gradients: {what} must be Tensors, got {type(t).__name__}")
    if t._node is not None:
        return t._node if t._node.graph is graph else None
    return graph.captured(t)


def _float_reachable(graph_nodes, x_nodes: set) -> set:
    """Nodes that depend on an x through differentiable ops with floating outputs."""
    reach = set(x_nodes)
    for node in graph_nodes:
        if node in reach or not node.op.differentiable:
            continue
        if node.dtype is not None and not is_floating(node.dtype):
            continue
        if any(i in reach for i in node.inputs):
            reach.add(node)
    return reach


def _ancestors(nodes) -> set:
    seen: set = set()
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(node.inputs)
    return seen


def _seed(y, g, graph):
    if g is None:
        shape = y.shape
        if any(d is None for d in shape) or math.prod(shape) != 1:
            raise GraphError(
                f"dj.gradients: {y.name!r} has shape {shape}, not a single value; pass grad_ys= "
                "(the gradient flowing into it, same shape) to differentiate a non-scalar"
            )
        return Tensor._make(default_backend().ones(shape, y.dtype))
    if isinstance(g, Tensor):
        return g
    return Tensor._make(default_backend().asarray(g, y.dtype))


def gradients(ys: Tensor | Sequence[Tensor], xs: Tensor | Sequence[Tensor],
              grad_ys: Tensor | Sequence[Tensor | None] | None = None) -> list[Tensor | None]:
    """Symbolic d(sum of ys)/d(x) for each x in `xs`, as new nodes of the ys' graph.

    `ys`, `xs`: a tensor or a list (xs may be Variables / Parameters the graph captured).
    `grad_ys`: the gradients flowing into each y (required for a y of more than one value).
    Returns a list aligned with `xs`; None where an x does not affect the ys (TensorFlow's rule).
    """
    ys, _ = _as_list(ys)
    xs, _ = _as_list(xs)
    graph = next((y._node.graph for y in ys if isinstance(y, Tensor) and y._node is not None),
                 None)
    if graph is None:
        raise GraphError("dj.gradients needs symbolic ys (built in a dj.Graph); eagerly use "
                         "loss.backward() or dj.grad(outputs, inputs)")
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    else:
        grad_ys, _ = _as_list(grad_ys)
        if len(grad_ys) != len(ys):
            raise GraphError(f"dj.gradients: {len(grad_ys)} grad_ys for {len(ys)} ys")
    y_nodes = [_node_in(graph, y, "ys") for y in ys]
    for y, node in zip(ys, y_nodes):
        if node is None and y._node is not None:
            raise GraphError(f"dj.gradients: ys {ys[0].name!r} and {y.name!r} belong to "
                             "different graphs")
    x_nodes = [_node_in(graph, x, "xs") for x in xs]
    targets = {n for n in x_nodes if n is not None}
    # gradient nodes keep the forward's dtypes: no autocasting while they are built
    with graph.as_default(), autocast_state.suspended():
        seeds = [_seed(y, g, graph) for y, g in zip(ys, grad_ys)]
        reach = _float_reachable(list(graph.nodes), targets)
        relevant = reach & _ancestors([n for n in y_nodes if n is not None])
        grads: dict = {}
        for node, seed in zip(y_nodes, seeds):
            if node in relevant:
                grads.setdefault(node, []).append(seed)
        order = sorted(relevant, key=lambda n: n.id, reverse=True)
        for node in order:
            first = len(graph.nodes)
            _propagate(node, grads, relevant)
            graph.backward_of.update(dict.fromkeys(graph.nodes[first:], node))
        results = [_total(grads.get(n)) if n is not None else None for n in x_nodes]
        for x, g in zip(x_nodes, results):
            if g is not None and g._node is not None and x.op.name == "variable":
                graph.gradient_of[g._node] = x
        return results


def _total(parts):
    if not parts:
        return None
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    if len(parts) > 1:
        parts[:] = [total]
    return total


def _propagate(node, grads: dict, relevant: set) -> None:
    """Push the summed gradient of `node` to its inputs through its vjp."""
    op = node.op
    if op.kind == "source" or not op.differentiable or node not in grads:
        return
    if op.name == "tuple_get":
        (src,) = node.inputs
        g = _total(grads[node])
        grads.setdefault(src, {})[node.attrs["index"]] = g
        return
    entry = grads[node]
    g = entry if isinstance(entry, dict) else _total(entry)
    if isinstance(g, dict):
        n_out = len(node.attrs["out_specs"])
        g = tuple(g.get(i) for i in range(n_out))
    needs = tuple(i in relevant for i in node.inputs)
    if not any(needs):
        return
    inputs = [Tensor._symbolic(i) for i in node.inputs]
    with on_rank(node.rank):  # a gradient is computed where its forward op runs
        results = op.vjp(g, inputs, Tensor._symbolic(node), needs, node.attrs)
    for inp, need, r in zip(node.inputs, needs, results):
        if need and r is not None:
            if not isinstance(r, Tensor):
                r = Tensor._make(default_backend().asarray(r, inp.dtype))
            if tuple(r.shape) != tuple(inp.shape) or (
                    None in tuple(inp.shape) and _broadcasts(op)):
                r = _fit_shape(r, inp)
            grads.setdefault(inp, []).append(r)


# ops besides the elementwise ones whose output may broadcast an input (their gradient then
# needs reducing, decided at run time where a dim is unknown)
_BROADCASTING = frozenset({"broadcast_to_like", "matmul"})


def _broadcasts(op) -> bool:
    return op.kind is Kind.ELEMENTWISE or op.name in _BROADCASTING


def _fit_shape(g, inp):
    """Reduce a broadcast gradient to its input's shape (the rules never do).

    Where the input has an unknown dim, whether broadcasting stretched it is known only when
    the graph runs, so the reduction is an op that decides then.
    """
    if None in tuple(inp.shape):  # ops sit above graphs: their functions are late slots
        return late.sum_to_like(g, Tensor._symbolic(inp))
    return late.sum_to_shape(g, tuple(inp.shape))
