"""`backward()` and `dj.grad()`: the user-facing entries to the backward engine."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, overload

from ..backends import backend_of, numpy_backend
from ..core import late
from ..errors import GraphError, ShapeError
from ..graph.gradients import gradients
from ..short_paths import declare as _declare_short_path
from ..short_paths import state as _short
from ..tensor import Tensor, grad_scope
from .engine import run_backward
from .function import accumulator_of

if TYPE_CHECKING:
    from ..types import TensorLike

_NDARRAY = numpy_backend.array_types[0]
_numpy_array = numpy_backend.xp.array

_declare_short_path("api.one_root_backward", __name__, "`loss.backward()` of one eager result "
                    "without the lists and checks of the general entry")
_declare_short_path("api.size_one_seed", __name__, "the seed of a one-element output made by "
                    "reshaping a 0-d array instead of the backend's ones()")


def _root_node(t):
    if t.grad_fn is not None:
        return t.grad_fn
    if t.requires_grad:
        return accumulator_of(t)
    raise RuntimeError(
        f"element of differentiated tensors does not require grad and does not have a grad_fn "
        f"(shape {t.shape}): call .requires_grad_() on the leaves you differentiate by"
    )


def _initial_grad(t, gradient):
    if t._node is not None:
        raise GraphError(
            f"backward() of symbolic tensor {t.name!r}: in a graph, use dj.gradients(ys, xs) "
            "or optimizer.minimize(loss)"
        )
    if gradient is None:
        if t._data.size != 1:
            raise RuntimeError(
                f"grad can be implicitly created only for scalar outputs; this output has shape "
                f"{t.shape}: pass gradient= (a tensor of that shape) to backward()"
            )
        data = t._data
        if type(data) is _NDARRAY and _short.on:  # short path: api.size_one_seed
            one = _numpy_array(1, data.dtype)  # a fifth of `ones`' cost
            return Tensor._make(one.reshape(data.shape) if data.ndim else one)
        return Tensor._make(backend_of(data).ones(data.shape, data.dtype))
    gradient = late.as_tensor(gradient)  # ops sit above the tape: a late slot
    if gradient.shape != t.shape:
        raise ShapeError(
            f"backward: gradient of shape {gradient.shape} does not match the output's shape "
            f"{t.shape}"
        )
    if gradient.dtype != t.dtype:
        gradient = gradient.to(t.dtype)
    return gradient


class _Callbacks(threading.local):
    pending = None  # functions to run once the current backward() has finished (a class
    # default: a thread that queued nothing reads it without an AttributeError)


_callbacks = _Callbacks()


def queue_callback(fn) -> None:
    """Run `fn()` once, when the backward() now running (or the next one) has finished.

    DistributedDataParallel waits here for its gradient all-reduces, so they overlap backward
    but are complete when backward() returns (PyTorch's engine.queue_callback).
    """
    pending = _callbacks.pending
    if pending is None:
        pending = _callbacks.pending = []
    pending.append(fn)


def _run_callbacks(failed: bool) -> None:
    pending = _callbacks.pending
    if not pending:
        return
    _callbacks.pending = []
    if not failed:
        for fn in pending:
            fn()


def backward(tensors: Tensor | Sequence[Tensor],
             grad_tensors: Tensor | Sequence[Tensor | None] | None = None,
             retain_graph: bool | None = None, create_graph: bool = False,
             inputs: Tensor | Sequence[Tensor] | None = None) -> None:
    """Accumulate the gradients of `tensors` into the `.grad` of the leaves they depend on (of
    `inputs` only, when given: leaves or not, as PyTorch's)."""
    if inputs is not None:
        return _backward_into(tensors, grad_tensors, retain_graph, create_graph, inputs)
    try:
        _backward(tensors, grad_tensors, retain_graph, create_graph)
    except BaseException:
        _run_callbacks(failed=True)
        raise
    _run_callbacks(failed=False)


def _backward(tensors, grad_tensors, retain_graph, create_graph) -> None:
    if (isinstance(tensors, Tensor) and tensors.grad_fn is not None and tensors._node is None
            and _short.on):  # short path: api.one_root_backward
        if retain_graph is None:
            retain_graph = create_graph
        return run_backward([tensors.grad_fn], [_initial_grad(tensors, grad_tensors)],
                            retain_graph, create_graph)
    if isinstance(tensors, Tensor):
        tensors = [tensors]
        grad_tensors = [grad_tensors]
    elif grad_tensors is None:
        grad_tensors = [None] * len(tensors)
    if any(t._node is not None for t in tensors):
        return _symbolic_backward(tensors, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    roots = [_root_node(t) for t in tensors]
    grads = [_initial_grad(t, g) for t, g in zip(tensors, grad_tensors)]
    run_backward(roots, grads, retain_graph, create_graph)


def _symbolic_backward(tensors, grad_tensors) -> None:
    """backward() of a symbolic tensor: gradients as graph nodes, kept by the dj.jit trace."""
    scope = grad_scope.current
    if scope is None:
        t = next(t for t in tensors if t._node is not None)
        raise GraphError(
            f"backward() of symbolic tensor {t.name!r}: in a graph, use dj.gradients(ys, xs) "
            "or optimizer.minimize(loss); inside a function traced by dj.jit, backward() works"
        )
    scope.backward(tensors, grad_tensors)


@overload
def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: Literal[False] = False,
) -> tuple[Tensor, ...]: ...
@overload
def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
) -> tuple[Tensor | None, ...]: ...


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
) -> tuple[Tensor | None, ...]:
    """Gradients of `outputs` with respect to `inputs`, returned (not accumulated into .grad).

    With `create_graph=True` the result is itself on the tape, so it can be differentiated
    again (higher-order gradients).
    """
    single = isinstance(outputs, Tensor)
    outputs = [outputs] if single else list(outputs)
    if isinstance(inputs, Tensor):
        inputs = [inputs]
    inputs = list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs] * len(outputs) if single else (
            grad_outputs if grad_outputs is not None else [None] * len(outputs)
        )
        if isinstance(grad_outputs, Tensor):
            grad_outputs = [grad_outputs]
    if any(t._node is not None for t in outputs):
        return _symbolic_grad(outputs, inputs, grad_outputs, allow_unused)
    if retain_graph is None:
        retain_graph = create_graph
    for x in inputs:
        if not x.requires_grad:
            raise RuntimeError(f"dj.grad: an input (shape {x.shape}) does not require grad")
    capture_nodes = [_capture_node(x) for x in inputs]
    capture = dict.fromkeys(capture_nodes)
    roots = [_root_node(t) for t in outputs]
    grads = [_initial_grad(t, g) for t, g in zip(outputs, grad_outputs)]
    run_backward(roots, grads, retain_graph, create_graph, capture=capture)
    result = []
    for x, node in zip(inputs, capture_nodes):
        g = capture[node]
        if g is None and not allow_unused:
            raise RuntimeError(
                f"dj.grad: one of the inputs (shape {x.shape}) was not used to compute the "
                "outputs; pass allow_unused=True if that is intended"
            )
        if g is not None and not create_graph:
            g = g.detach()
        result.append(g)
    return tuple(result)


def _backward_into(tensors, grad_tensors, retain_graph, create_graph, inputs) -> None:
    """backward(..., inputs=): the gradients with respect to `inputs`, added to their .grad."""
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if not inputs:
        raise RuntimeError("backward: the 'inputs' argument cannot be empty")
    found = grad(tensors, inputs, grad_tensors, retain_graph, create_graph, allow_unused=True)
    for x, g in zip(inputs, found):
        if g is not None:
            x.grad = g if x.grad is None else x.grad + g


def _symbolic_grad(outputs, inputs, grad_outputs, allow_unused: bool) -> tuple:
    """dj.grad of symbolic outputs (in a graph, e.g. inside dj.jit): `dj.gradients` nodes."""
    grad_ys = None if all(g is None for g in grad_outputs) else list(grad_outputs)
    result = gradients(outputs, inputs, grad_ys)
    if not allow_unused and any(g is None for g in result):
        raise RuntimeError("dj.grad: one of the inputs was not used to compute the outputs; "
                           "pass allow_unused=True if that is intended")
    return tuple(result)


def _capture_node(x):
    if x.grad_fn is not None:
        return x.grad_fn
    return accumulator_of(x)


def _as_list(value) -> Sequence:
    return value if isinstance(value, (list, tuple)) else [value]


def _tensor_backward(self: Tensor, gradient: TensorLike | None = None,
                     retain_graph: bool | None = None, create_graph: bool = False,
                     inputs: Sequence[Tensor] | Tensor | None = None) -> None:
    """Accumulate d(self)/d(leaf) into every leaf's `.grad`, or into the `.grad` of `inputs`
    only (see `dj.autograd.backward`)."""
    backward(self, gradient, retain_graph, create_graph, inputs)


_tensor_backward.__name__ = _tensor_backward.__qualname__ = "backward"
Tensor.backward = _tensor_backward
