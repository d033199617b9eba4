"""State effects: `assign` (write a Variable) and `group` (run several effects as one op)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..backends import backend_of
from ..core import infer as inf
from ..core.registry import Spec, define, register
from ..dispatch import apply
from ..dtypes import is_floating
from ..errors import DTypeError, GraphError, ShapeError
from ..graph import builder
from ..graph.program import commit_assignments
from ..tensor import Tensor
from .convert import as_tensor

if TYPE_CHECKING:
    from ..types import TensorLike


def _assign_forward(xp, old, value, ref):
    """The value to commit: `value` cast to the Variable's dtype, broadcast to its shape."""
    return xp.broadcast_to(xp.asarray(value, dtype=old.dtype), old.shape)


def _assign_infer(var: Spec, value: Spec, ref):
    name = getattr(ref, "var_name", None) or "variable"
    if is_floating(value.dtype) and not is_floating(var.dtype):
        raise DTypeError(f"assign: cannot store a {value.dtype} value into the {var.dtype} "
                         f"Variable {name!r}")
    if value.dtype.kind not in "biuf":
        raise DTypeError(f"assign: cannot store a {value.dtype} value into Variable {name!r}")
    try:
        shape = inf.broadcast("assign", var.shape, value.shape)
    except ShapeError:
        shape = None
    if shape is None or len(shape) != len(var.shape) or any(
        a is not None and b is not None and a != b for a, b in zip(shape, var.shape)
    ):
        raise ShapeError(f"assign: a value of shape {inf.fmt(value.shape)} does not fit the "
                         f"Variable {name!r} of shape {inf.fmt(var.shape)}")
    return var.shape, var.dtype


_assign = define("assign", forward=_assign_forward, infer=_assign_infer, kind="effect",
                 onnx_reason="a state update: export an inference function, not a training step")
_group = register("group", forward=lambda *values: None, infer=lambda *specs: ((), None),
                  kind="effect", onnx_reason="groups state updates: export an inference "
                  "function, not a training step")


def assign(var: Tensor, value: TensorLike) -> Tensor:
    """Set Variable `var` to `value` (broadcast, cast to its dtype).

    Eagerly it writes now and returns `var`. In a graph it returns an op to fetch or group;
    `Session.run` commits every assignment at the end of a successful run, so all reads in that
    run see the old value.
    """
    ref = _variable_of(var)
    value = as_tensor(value, ref)
    if builder.state.graph is None and value._node is None:
        _assign_infer(Spec(ref._data.shape, ref._data.dtype),
                      Spec(value._data.shape, value._data.dtype), ref)
        xp = backend_of(ref._data).xp
        commit_assignments([(ref, _assign_forward(xp, ref._data, value._data, ref))])
        return var
    graph = builder.state.graph
    if graph is not None and graph.parent is not None:
        raise GraphError("dj.assign inside a dj.cond / dj.while_loop function is not supported; "
                         "assign the op's result outside it")
    if graph is None:
        graph = value._node.graph
    var_node = builder.capture_as_variable(graph, ref)
    return apply(_assign, Tensor._symbolic(var_node), value, ref=ref)


def _variable_of(var):
    if isinstance(var, Tensor) and var._node is not None:
        node = var._node
        if node.op.name == "variable":
            return node.attrs["ref"]
        raise GraphError(f"dj.assign: {node.name!r} is a {node.op.name} result, not a Variable")
    if isinstance(var, Tensor) and var.grad_fn is None:
        return var
    raise GraphError("dj.assign: the target must be a dj.Variable (or nn.Parameter, or a "
                     f"captured variable node), got {type(var).__name__}")


def group(*ops: Tensor | Sequence[Tensor | None] | None) -> Tensor | None:
    """One op that runs all `ops` (assignments, other groups); fetching it gives None.

    Eagerly the effects already happened: returns None.
    """
    flat = []
    for item in ops:
        if isinstance(item, (list, tuple)):
            flat.extend(item)
        elif item is not None:
            flat.append(item)
    symbolic = [t for t in flat if isinstance(t, Tensor) and t._node is not None]
    if not symbolic:
        return None
    return apply(_group, *symbolic)
