"""tf.placeholder, tf.while_loop, tf.cond, tf.gradients, tf.group: TF1's spellings of
dongjing's graph inputs, control flow and symbolic gradients."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import ops as _ops
from ...errors import GraphError
from ...graph.builder import placeholder as _dj_placeholder
from ...graph.gradients import gradients as _dj_gradients
from ...ops.control import cond as _dj_cond
from ...ops.control import while_loop as _dj_while_loop
from ...ops.state import group as _dj_group
from ...tensor import Tensor
from .deferred import Deferred, record
from .dtypes import as_dtype
from .graphs import building, get_default_graph, tf_function
from .math_ops import _t
from .session import Operation
from .unsupported import not_provided

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ...types import DTypeLike, TensorLike


def placeholder(dtype: DTypeLike, shape: Sequence[int | None] | int | None = None,
                name: str | None = None) -> Tensor:
    """A graph input fed in `sess.run(feed_dict=...)`. `None` dims take any size; with no
    `shape` at all (unknown rank) any rank is accepted, and each rank fed gets its own nodes."""
    dtype = as_dtype(dtype)
    graph = get_default_graph()
    if shape is None:
        return Deferred.leaf(dtype, name or "Placeholder", graph)
    if isinstance(shape, Tensor):
        not_provided("tf.placeholder with a tensor shape")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    with building():
        return _dj_placeholder(shape, dtype, name=name or "Placeholder")


def while_loop(cond: Callable[..., TensorLike],
               body: Callable[..., TensorLike | Sequence[TensorLike]], loop_vars: TensorLike,
               shape_invariants: None = None, parallel_iterations: int = 10,
               back_prop: bool = True, swap_memory: bool = False, name: str | None = None,
               maximum_iterations: int | None = None, return_same_structure: bool = False
               ) -> Tensor | list[Tensor] | tuple[Tensor, ...]:
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`. As in TF1, a single loop
    variable comes back as a tensor, not a one-element list (unless return_same_structure)."""
    if shape_invariants is not None:
        not_provided("tf.while_loop(shape_invariants=...) (loop variables keep their shapes)")
    if not back_prop:
        not_provided("tf.while_loop(back_prop=False)")
    values = list(loop_vars) if isinstance(loop_vars, (list, tuple)) else [loop_vars]
    if any(isinstance(v, Deferred) for v in values):
        result = record(_while_now, (cond, body, loop_vars, maximum_iterations,
                                     return_same_structure), {}, "while_loop")
        if len(values) == 1 and not return_same_structure:
            return result
        return [record(_item, (result, i), {}, "while_loop") for i in range(len(values))]
    return _while_now(cond, body, loop_vars, maximum_iterations, return_same_structure)


def _item(values, i):
    return values[i]


def _while_now(cond, body, loop_vars, maximum_iterations, return_same_structure):
    single = not isinstance(loop_vars, (list, tuple))
    with building((loop_vars,)):
        values = [_t(v) for v in ([loop_vars] if single else loop_vars)]
        out = _dj_while_loop(cond, body, values, maximum_iterations=maximum_iterations)
    if len(out) == 1 and not return_same_structure:
        return out[0]
    return type(loop_vars)(out) if not single else out[0]


@tf_function
def cond(pred: TensorLike, true_fn: Callable[[], Any] | None = None,
         false_fn: Callable[[], Any] | None = None, strict: bool = False,
         name: str | None = None, fn1: Callable[[], Any] | None = None,
         fn2: Callable[[], Any] | None = None) -> Any:
    """`true_fn()` if `pred` else `false_fn()`, as one graph op (only the taken branch runs).
    A one-element list result is unwrapped unless `strict`, as in TF1."""
    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    if true_fn is None or false_fn is None:
        raise GraphError("tf.cond needs true_fn and false_fn")
    result = _dj_cond(pred, true_fn, false_fn)
    if not strict and isinstance(result, (list, tuple)) and len(result) == 1:
        return result[0]
    return result


@tf_function
def gradients(ys: Tensor | Sequence[Tensor], xs: Tensor | Sequence[Tensor],
              grad_ys: TensorLike | Sequence[TensorLike | None] | None = None,
              name: str = "gradients", colocate_gradients_with_ops: bool = False,
              gate_gradients: bool = False, aggregation_method: object = None,
              stop_gradients: None = None) -> list[Tensor | None]:
    """d(sum of ys)/d(x) for each x of `xs`, as a list (None where an x does not affect ys)."""
    if stop_gradients is not None:
        not_provided("tf.gradients(stop_gradients=...)")
    ys_list = list(ys) if isinstance(ys, (list, tuple)) else [ys]
    if grad_ys is None:
        grad_ys = [None if y.shape == () else _ops.ones_like(y) for y in ys_list]
    elif not isinstance(grad_ys, (list, tuple)):
        grad_ys = [grad_ys]
    return _dj_gradients(ys_list, xs, list(grad_ys))


def group(*inputs: Operation | Tensor | Sequence[Operation | Tensor] | None,
          name: str | None = None) -> Operation:
    """One op running all `inputs` (Operations, assignments)."""
    flat = []
    for item in inputs:
        items = item if isinstance(item, (list, tuple)) else [item]
        for op in items:
            if isinstance(op, Deferred):
                not_provided("tf.group of ops built from an unknown-rank placeholder")
            flat.append(op.tensor if isinstance(op, Operation) else op)
    symbolic = [t for t in flat if t is not None]
    if not symbolic:
        return Operation(None, name)
    return Operation(_dj_group(*symbolic), name)


def no_op(name: str | None = None) -> Operation:
    """An op that does nothing."""
    return Operation(None, name)
