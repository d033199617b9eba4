"""`dj.autograd.Function`: a PyTorch-style custom op with a hand-written backward.

A subclass becomes one op of the extension API (`dongjing.core.registry.define`, not entered in the
global table): eagerly, `apply` runs `forward` once under `no_grad` and records a tape node
whose backward calls the subclass's `backward` with the same `ctx`; in a graph (or while
`dj.jit` traces) the op's forward runs `forward` on the fed arrays and its gradient is a node
that re-runs `forward` to rebuild `ctx`, then calls `backward`. Non-Tensor arguments are
attributes of the op.
"""

from __future__ import annotations

from typing import Any

from ..backends import backend_of, default_backend, numpy_backend
from ..core import late
from ..core.registry import Kind, Op, define
from ..errors import DongjingError, ShapeError
from ..graph import builder
from ..tensor import Tensor
from .function import record
from .grad_mode import no_grad
from .grad_mode import state as grad_state


class FunctionCtx:
    """What `forward` leaves for `backward`: saved tensors and flags, as in PyTorch."""

    def __init__(self, needs_input_grad: tuple[bool, ...]) -> None:
        self.needs_input_grad = needs_input_grad
        self.saved_tensors: tuple[Tensor, ...] = ()
        self.non_differentiable: set[int] = set()

    def save_for_backward(self, *tensors: Tensor) -> None:
        """Keep `tensors` for `backward` (read them back as `ctx.saved_tensors`)."""
        self.saved_tensors = tuple(tensors)

    def mark_non_differentiable(self, *outputs: Tensor) -> None:
        """Outputs that carry no gradient (e.g. indices)."""
        self.non_differentiable.update(id(o) for o in outputs)


class Function:
    """Subclass with `@staticmethod forward(ctx, *args)` and `backward(ctx, grad_output)`
    (returning one gradient, or None, per argument of `forward`), then call `.apply(*args)`.

    >>> class Square(dj.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return g * 2 * x
    """

    _op: Op | None = None
    _grad_ops: dict | None = None

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("a dj.autograd.Function subclass defines forward(ctx, ...)")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("a dj.autograd.Function subclass defines backward(ctx, g)")

    @classmethod
    def apply(cls, *args: Any):
        """Run the function: eagerly (recording `backward` on the tape) or as a graph node."""
        tensors = [a for a in args if isinstance(a, Tensor)]
        template = _Template(tuple(_tensor_positions(args)))
        op = _op_of(cls)
        if builder.state.graph is not None or any(t._node is not None for t in tensors):
            return builder.add(op, tensors, {"template": template})
        needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        ctx = FunctionCtx(needs)
        out = _run_forward(cls, ctx, tensors, template)
        if not (grad_state.grad_enabled and any(needs)) or id(out) in ctx.non_differentiable:
            return Tensor._make(out._data)
        result = Tensor._make(out._data, True)
        template.ctx = ctx
        record(op, tuple(tensors), {"template": template}, result)
        return result


class _Slot:
    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = i


class _Template:
    """The call's arguments with each Tensor replaced by its position among the op's inputs
    (an attribute of one call; `ctx` is the eager call's context, for its backward)."""

    def __init__(self, items: tuple):
        self.items = items
        self.ctx = None

    def fill(self, tensors: list) -> list:
        return [tensors[item.i] if isinstance(item, _Slot) else item for item in self.items]


def _tensor_positions(args: tuple) -> list:
    """`args` with each Tensor replaced by a `_Slot` numbering the Tensors in order."""
    out, k = [], 0
    for a in args:
        if isinstance(a, Tensor):
            out.append(_Slot(k))
            k += 1
        else:
            out.append(a)
    return out


def _run_forward(cls, ctx, tensors, template):
    graph, builder.state.graph = builder.state.graph, None  # the forward runs on arrays
    try:
        with no_grad():
            out = cls.forward(ctx, *template.fill(list(tensors)))
    finally:
        builder.state.graph = graph
    if not isinstance(out, Tensor):
        raise DongjingError(
            f"{cls.__name__}.forward must return one Tensor (tuples of outputs are not "
            f"supported yet), got {type(out).__name__}")
    return out


def _op_of(cls) -> Op:
    op = cls.__dict__.get("_op")
    if op is not None:
        return op

    def forward(xp, *arrays, template):
        ctx = FunctionCtx((False,) * len(template.items))
        return _run_forward(cls, ctx, [Tensor._make(a) for a in arrays], template)._data

    def infer(*specs, template):
        host = default_backend()
        if any(d is None for s in specs for d in s.shape):
            dummy = [host.zeros([1 if d is None else d for d in s.shape], s.dtype) for s in specs]
            out = forward(host.xp, *dummy, template=template)
            return tuple(None for _ in out.shape), out.dtype
        out = forward(host.xp, *[host.zeros(s.shape, s.dtype) for s in specs], template=template)
        return tuple(out.shape), out.dtype

    def vjp(g, inputs, out, needs, attrs):
        template = attrs["template"]
        ctx = getattr(template, "ctx", None)
        if ctx is not None and g._node is None and all(t._node is None for t in inputs):
            grads = _call_backward(cls, ctx, g, len(template.items))
        else:  # symbolic: a node per input that re-runs forward, then backward
            grads = [None] * len(template.items)
            for k, need in enumerate(needs):
                if need:
                    grads[_position(template, k)] = _grad_node(cls, g, inputs, template, k)
        return tuple(grads[_position(template, k)] for k in range(len(inputs)))

    op = define(f"{cls.__name__}", forward=forward, infer=infer, vjp=vjp, kind=Kind.OPAQUE,
                grad_name=f"{cls.__name__}Backward", onnx=None,
                onnx_reason="a Python autograd.Function", table=False)
    cls._op = op
    return op


def _position(template, k: int) -> int:
    """Index among forward's arguments of the op's k-th input."""
    for i, item in enumerate(template.items):
        if isinstance(item, _Slot) and item.i == k:
            return i
    raise DongjingError("internal: autograd.Function input not in its template")


def _call_backward(cls, ctx, g, n_args: int) -> list:
    grads = cls.backward(ctx, g)  # grad mode is the engine's (on only for create_graph)
    if not isinstance(grads, tuple):
        grads = (grads,)
    if len(grads) != n_args:
        raise DongjingError(
            f"{cls.__name__}.backward returned {len(grads)} gradients for a forward of "
            f"{n_args} arguments (return None for an argument without gradient)")
    return [g if g is None or isinstance(g, Tensor) else Tensor._make(_as_array(g)) for g in grads]


def _as_array(g):
    """A gradient a user's backward returned as an array (a NumPy scalar becomes 0-d)."""
    found = backend_of(g, None)
    if found is not None and isinstance(g, found.array_types[0]):
        return g
    return numpy_backend.xp.asarray(g)


def _grad_node(cls, g, inputs, template, k):
    return late.apply(_grad_op_of(cls), g, *inputs, template=template, index=k)  # dispatch: above


def _grad_op_of(cls) -> Op:
    op = cls.__dict__.get("_grad_op")
    if op is not None:
        return op

    def forward(xp, g, *arrays, template, index):
        ctx = FunctionCtx(tuple(True for _ in template.items))
        _run_forward(cls, ctx, [Tensor._make(a) for a in arrays], template)
        graph, builder.state.graph = builder.state.graph, None
        try:
            grads = _call_backward(cls, ctx, Tensor._make(g), len(template.items))
        finally:
            builder.state.graph = graph
        grad = grads[_position(template, index)]
        if grad is None:
            return xp.zeros_like(arrays[index])
        if grad.shape != arrays[index].shape:
            raise ShapeError(f"{cls.__name__}.backward: gradient of shape {grad.shape} for an "
                             f"input of shape {arrays[index].shape}")
        return grad._data

    def infer(g, *specs, template, index):
        return specs[index].shape, specs[index].dtype

    op = define(f"{cls.__name__}_backward", forward=forward, infer=infer, kind=Kind.OPAQUE,
                onnx=None, onnx_reason="a Python autograd.Function", table=False)
    cls._grad_op = op
    return op
