"""Control flow as graph ops: `cond` and `while_loop` run sub-graphs; `tuple_get` picks one of
their outputs. Eagerly `dj.cond` / `dj.while_loop` are plain Python."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar, overload

from ..core import infer as inf
from ..core import late
from ..core.registry import Spec, register
from ..dispatch import apply
from ..errors import DTypeError, GraphError, ShapeError
from ..graph import builder
from ..graph.gradients import gradients
from ..tensor import Tensor
from . import onnx_graph_rules
from .convert import as_tensor
from .elementwise import zeros_like
from .subgraph import inline, trace
from .while_grad import while_vjp

if TYPE_CHECKING:
    from ..types import TensorLike

_T = TypeVar("_T")
_L = TypeVar("_L", bound="TensorLike")
C = "control"


# --- the ops ---------------------------------------------------------------------------------
def _program(sub, arrays=()):
    return late.subgraph_program(sub, arrays)  # the runtime sits above: a late slot


def _cond_forward(pred, *captures, true_graph, false_graph, out_specs):
    n_true = len(true_graph.captures)
    if bool(pred):
        return tuple(_program(true_graph, captures)(list(captures[:n_true])))
    return tuple(_program(false_graph, captures)(list(captures[n_true:])))


def _cond_infer(pred: Spec, *captures: Spec, true_graph, false_graph, out_specs):
    if pred.dtype.kind != "b" or inf.numel(pred.shape) != 1:
        raise DTypeError(f"cond: the predicate must be a single bool, got {pred.dtype} of shape "
                         f"{inf.fmt(pred.shape)}")
    return (), None


def _while_forward(*arrays, cond_graph, body_graph, n_vars, maximum_iterations, out_specs):
    values = list(arrays[:n_vars])
    n_cond = len(cond_graph.captures)
    cond_caps = list(arrays[n_vars:n_vars + n_cond])
    body_caps = list(arrays[n_vars + n_cond:])
    test, step = _program(cond_graph, arrays), _program(body_graph, arrays)
    steps = 0
    while maximum_iterations is None or steps < maximum_iterations:
        if not test(values + cond_caps)[0]:
            break
        values = step(values + body_caps)
        steps += 1
    return tuple(values)


def _while_infer(*specs, cond_graph, body_graph, n_vars, maximum_iterations, out_specs):
    return (), None


def _tuple_get_vjp(g, inputs, out, needs, attrs):
    raise GraphError("internal: tuple_get gradients are routed by dj.gradients")


_cond = register("cond", forward=_cond_forward, infer=_cond_infer, vjp=lambda *a: _cond_vjp(*a),
                 kind=C, onnx=onnx_graph_rules.cond)
_while = register("while_loop", forward=_while_forward, infer=_while_infer,
                  vjp=lambda *a: _while_vjp(*a), kind=C, onnx=onnx_graph_rules.while_loop)
_tuple_get = register(
    "tuple_get", forward=lambda values, index, shape, dtype: values[index],
    infer=lambda values, index, shape, dtype: (shape, dtype), vjp=_tuple_get_vjp, kind=C,
    onnx=onnx_graph_rules.tuple_get,
)


# --- building ----------------------------------------------------------------------------------
def _is_graph_mode(*tensors) -> bool:
    if builder.state.graph is not None:
        return True
    return any(isinstance(t, Tensor) and t._node is not None for t in tensors)


def _outputs(node, specs, structure):
    """tuple_get tensors of a control node, in the structure the user's function returned."""
    outs = [apply(_tuple_get, Tensor._symbolic(node), index=i, shape=s.shape, dtype=s.dtype)
            for i, s in enumerate(specs)]
    if isinstance(structure, (list, tuple)):
        return type(structure)(outs) if type(structure) in (list, tuple) else tuple(outs)
    return outs[0]


def _merge_specs(where: str, a_nodes, b_nodes) -> list:
    if len(a_nodes) != len(b_nodes):
        raise GraphError(f"{where}: the branches return {len(a_nodes)} and {len(b_nodes)} values; "
                         "both must return the same structure")
    specs = []
    for i, (a, b) in enumerate(zip(a_nodes, b_nodes)):
        if a.dtype != b.dtype:
            raise DTypeError(f"{where}: output {i} is {a.dtype} in one branch and {b.dtype} in "
                             "the other")
        if len(a.shape) != len(b.shape):
            raise ShapeError(f"{where}: output {i} has shape {inf.fmt(a.shape)} in one branch and "
                             f"{inf.fmt(b.shape)} in the other")
        shape = tuple(x if x == y else None for x, y in zip(a.shape, b.shape))
        specs.append(Spec(shape, a.dtype))
    return specs


def _parent_graph(*tensors):
    if builder.state.graph is not None:
        return builder.state.graph
    for t in tensors:
        if isinstance(t, Tensor) and t._node is not None:
            return t._node.graph
    raise GraphError("internal: no graph")


def cond(pred: TensorLike, true_fn: Callable[[], _T], false_fn: Callable[[], _T]) -> _T:
    """`true_fn()` if `pred` else `false_fn()`, as one graph op (both branches are built as
    sub-graphs; only the taken one runs). Eagerly: a Python `if`.

    Both functions take no arguments and return the same structure of tensors.
    """
    if not _is_graph_mode(pred):
        return true_fn() if bool(as_tensor(pred)) else false_fn()
    parent = _parent_graph(pred)
    pred_t = as_tensor(pred)
    pred_node = builder.to_node(parent, pred_t)
    _cond_infer(Spec(pred_node.shape, pred_node.dtype), true_graph=None, false_graph=None,
                out_specs=None)  # a bad predicate fails before the branches are traced
    true_graph, structure = trace(lambda: true_fn(), [], parent, "true_branch")
    false_graph, _ = trace(lambda: false_fn(), [], parent, "false_branch")
    specs = _merge_specs("dj.cond", true_graph.outputs, false_graph.outputs)
    captures = true_graph.captures + false_graph.captures

    inputs = [Tensor._symbolic(pred_node)] + [Tensor._symbolic(n) for n in captures]
    node = apply(_cond, *inputs, true_graph=true_graph, false_graph=false_graph,
                 out_specs=specs)._node
    return _outputs(node, specs, structure)


@overload
def while_loop(cond: Callable[..., TensorLike],
               body: Callable[..., TensorLike | Sequence[TensorLike]],
               loop_vars: list[_L], maximum_iterations: int | None = None
               ) -> list[Tensor]: ...
@overload
def while_loop(cond: Callable[..., TensorLike],
               body: Callable[..., TensorLike | Sequence[TensorLike]],
               loop_vars: tuple[TensorLike, ...], maximum_iterations: int | None = None
               ) -> tuple[Tensor, ...]: ...
@overload
def while_loop(cond: Callable[..., TensorLike],
               body: Callable[..., TensorLike | Sequence[TensorLike]],
               loop_vars: TensorLike, maximum_iterations: int | None = None) -> Tensor: ...


def while_loop(cond: Callable[..., TensorLike],
               body: Callable[..., TensorLike | Sequence[TensorLike]],
               loop_vars: TensorLike, maximum_iterations: int | None = None
               ) -> Tensor | list[Tensor] | tuple[Tensor, ...]:
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`, at most
    `maximum_iterations` times; returns the final loop variables (same structure).

    In a graph it is one op with two sub-graphs; gradients flow through it (each iteration's
    values are kept for the backward pass). Eagerly it is a Python `while`.
    """
    single = not isinstance(loop_vars, (list, tuple))
    values = [loop_vars] if single else list(loop_vars)
    if not _is_graph_mode(*values):
        steps = 0
        values = [as_tensor(v) for v in values]
        while (maximum_iterations is None or steps < maximum_iterations) and bool(
                cond(*values)):
            out = body(*values)
            values = [as_tensor(v) for v in (out if isinstance(out, (list, tuple)) else [out])]
            steps += 1
        return values[0] if single else type(loop_vars)(values)
    parent = _parent_graph(*values)

    init = [builder.to_node(parent, as_tensor(v)) for v in values]
    args = [(n.shape, n.dtype, f"loop_var_{i}") for i, n in enumerate(init)]
    cond_graph, _ = trace(cond, args, parent, "while_cond")
    (p,) = cond_graph.outputs[:1]
    if len(cond_graph.outputs) != 1 or p.dtype.kind != "b" or inf.numel(p.shape) != 1:
        raise DTypeError(f"dj.while_loop: cond must return one bool value, got {p.dtype} of "
                         f"shape {inf.fmt(p.shape)}")
    body_graph, _ = trace(body, args, parent, "while_body")
    _check_body(init, body_graph.outputs)
    specs = [Spec(n.shape, n.dtype) for n in init]
    inputs = [Tensor._symbolic(n) for n in init + cond_graph.captures + body_graph.captures]
    node = apply(_while, *inputs, cond_graph=cond_graph, body_graph=body_graph,
                 n_vars=len(init), maximum_iterations=maximum_iterations, out_specs=specs)._node
    outs = _outputs(node, specs, list(values))
    return outs[0] if single else type(loop_vars)(outs)


def _check_body(init, outputs) -> None:
    if len(outputs) != len(init):
        raise GraphError(f"dj.while_loop: body returns {len(outputs)} values for "
                         f"{len(init)} loop variables")
    for i, (a, b) in enumerate(zip(init, outputs)):
        if a.dtype != b.dtype:
            raise DTypeError(f"dj.while_loop: loop variable {i} enters as {a.dtype} but body "
                             f"returns {b.dtype}")
        if len(a.shape) != len(b.shape) or any(
            x is not None and y is not None and x != y for x, y in zip(a.shape, b.shape)
        ):
            raise ShapeError(f"dj.while_loop: loop variable {i} enters with shape "
                             f"{inf.fmt(a.shape)} but body returns shape {inf.fmt(b.shape)}")


# --- gradients -------------------------------------------------------------------------------
def _zeros_for(t):
    return zeros_like(t)


def _cond_vjp(g, inputs, out, needs, attrs):
    """The gradient of a cond is a cond of the branches' gradients (each branch recomputed)."""
    pred, *caps = inputs
    true_graph, false_graph = attrs["true_graph"], attrs["false_graph"]
    n_true = len(true_graph.captures)
    wanted = [i for i, need in enumerate(needs[1:]) if need]
    live = [i for i, gi in enumerate(g) if gi is not None]
    if not wanted or not live:
        return (None,) * len(inputs)

    def branch(sub, lo, hi):
        def fn():
            outs = [_local(t) for t in inline(sub, caps[lo:hi])]
            xs = [_local(t) for t in caps[lo:hi]]
            ys = [outs[i] for i in live]
            grads = gradients(ys, xs, grad_ys=[g[i] for i in live])
            result = []
            for i in wanted:
                r = grads[i - lo] if lo <= i < hi else None
                result.append(r if r is not None else _zeros_for(caps[i]))
            return result
        return fn

    results = cond(pred, branch(true_graph, 0, n_true), branch(false_graph, n_true, len(caps)))
    grads = [None] * len(inputs)
    for i, r in zip(wanted, results):
        grads[1 + i] = r
    return tuple(grads)


def _local(t):
    """`t` as a tensor of the graph being built now (capturing it from an outer graph)."""
    return Tensor._symbolic(builder.to_node(builder.state.graph, t))


def _while_vjp(g, inputs, out, needs, attrs):
    """Unroll the loop `maximum_iterations` times (one cond per step, so each step's values are
    recorded as nodes) and differentiate that chain."""
    limit = attrs["maximum_iterations"]
    if limit is None:  # no bound: per-iteration values on a stack (ops/while_grad.py)

        return while_vjp(g, inputs, out, needs, attrs)
    n = attrs["n_vars"]
    cond_graph, body_graph = attrs["cond_graph"], attrs["body_graph"]
    n_cond = len(cond_graph.captures)
    init, cond_caps, body_caps = inputs[:n], inputs[n:n + n_cond], inputs[n + n_cond:]
    values = list(init)
    for _ in range(limit):
        (pred,) = inline(cond_graph, values + list(cond_caps))
        current = values
        values = cond(pred, lambda v=current: inline(body_graph, v + list(body_caps)),
                      lambda v=current: list(v))
        values = list(values)
    live = [i for i, gi in enumerate(g) if gi is not None]
    wanted, seen = [], set()
    for i, need in enumerate(needs):  # a node at several positions gets its total gradient once
        if need and inputs[i]._node not in seen:
            seen.add(inputs[i]._node)
            wanted.append(i)
    grads = gradients([values[i] for i in live], [inputs[i] for i in wanted],
                      grad_ys=[g[i] for i in live])
    result = [None] * len(inputs)
    for i, r in zip(wanted, grads):
        result[i] = r
    return tuple(result)
