"""The one place that decides how an op runs: eagerly now (recording the tape), or as a graph node.

`apply(op, *inputs, **attrs)` takes Tensors. With no default graph and no symbolic input it runs
`op.forward` on the arrays and, when gradients are wanted, records a backward node; otherwise it
adds a node to the graph (shape and dtype from `op.infer`).
"""

from __future__ import annotations

from .autograd.function import record
from .autograd.grad_mode import state as _grad_state
from .errors import DongjingError, ShapeError
from .graph import builder as _builder
from .ops.registry import Op, Spec
from .profiler import hooks as _profiler  # `_profiler.on`: a profiler is recording
from .tensor import Tensor, ndarray

_graph_state = _builder.state
_make = Tensor._make


def apply(op: Op, *inputs: Tensor, **attrs) -> Tensor:
    """Run `op` on `inputs` (Tensors) eagerly or symbolically; the only entry to the op table."""
    if _graph_state.graph is not None:
        return _builder.add(op, inputs, attrs)
    requires = False
    arrays = []
    for t in inputs:
        if t._node is not None:
            return _builder.add(op, inputs, attrs)
        arrays.append(t.data)
        if t.requires_grad:
            requires = True
    try:
        if not _profiler.on:
            out = op.forward(*arrays, **attrs)
        else:  # profiler hook: the same call, timed
            out = _profiler.op_forward(op, arrays, attrs)
    except DongjingError:
        raise
    except Exception as exc:  # numpy's message is replaced by ours (op, shapes)
        raise explain_failure(op, inputs, attrs, exc) from exc
    if type(out) is not ndarray:
        out = _as_array(out)
    if requires and _grad_state.grad_enabled and op.differentiable:
        result = _make(out, True)
        record(op, inputs, attrs, result)
        return result
    return _make(out, False)


def apply1(op: Op, x: Tensor, **attrs) -> Tensor:
    """`apply` for one input: the hot path of unary elementwise ops."""
    if x._node is not None or _graph_state.graph is not None:
        return _builder.add(op, (x,), attrs)
    try:
        if not _profiler.on:
            out = op.forward(x.data, **attrs)
        else:  # profiler hook: the same call, timed
            out = _profiler.op_forward(op, (x.data,), attrs)
    except DongjingError:
        raise
    except Exception as exc:
        raise explain_failure(op, (x,), attrs, exc) from exc
    if type(out) is not ndarray:
        out = _as_array(out)
    if x.requires_grad and _grad_state.grad_enabled and op.differentiable:
        result = _make(out, True)
        record(op, (x,), attrs, result)
        return result
    return _make(out, False)


def apply2(op: Op, a: Tensor, b: Tensor, **attrs) -> Tensor:
    """`apply` for two inputs: the hot path of binary elementwise ops and matmul."""
    if a._node is not None or b._node is not None or _graph_state.graph is not None:
        return _builder.add(op, (a, b), attrs)
    try:
        if not _profiler.on:
            out = op.forward(a.data, b.data, **attrs)
        else:  # profiler hook: the same call, timed
            out = _profiler.op_forward(op, (a.data, b.data), attrs)
    except DongjingError:
        raise
    except Exception as exc:
        raise explain_failure(op, (a, b), attrs, exc) from exc
    if type(out) is not ndarray:
        out = _as_array(out)
    if (a.requires_grad or b.requires_grad) and _grad_state.grad_enabled and op.differentiable:
        result = _make(out, True)
        record(op, (a, b), attrs, result)
        return result
    return _make(out, False)


def _as_array(value):
    import numpy as np

    return np.asarray(value)


def explain_failure(op: Op, inputs, attrs, exc: Exception) -> Exception:
    """Turn a failure inside `op.forward` into a dongjing error naming the op and the shapes.

    Shape inference usually finds the fault and raises its own message; otherwise the original
    error is wrapped with the op and the shapes involved.
    """
    specs = [Spec(t.data.shape, t.data.dtype) for t in inputs]
    try:
        op.infer(*specs, **attrs)
    except DongjingError as found:
        return found
    shapes = ", ".join(str(tuple(s.shape)) for s in specs)
    return ShapeError(f"{op.name}: cannot apply to inputs of shapes {shapes}: {exc}")
