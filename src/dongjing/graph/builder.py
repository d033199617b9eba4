"""Building graphs: the default-graph stack, node creation with inference, and capture of eager
tensors (Variables and Parameters by reference, other tensors as constants)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import dtypes
from ..core import eager_modes as _eager_modes
from ..core.registry import Spec, register
from ..core.user_code import user_source_line
from ..errors import DongjingError, GraphError
from ..tensor import Tensor
from ..tensor.conversion import to_array
from . import onnx_rules
from .variable import Variable

if TYPE_CHECKING:
    from ..types import DTypeLike, TensorLike


class _State(threading.local):
    """The default-graph stack, one per thread: `with dj.Graph()` in one thread never makes
    another thread's eager ops symbolic. A new thread starts eager (no default graph)."""

    graph = None  # the innermost default graph, or None (eager); a class default: cheap reads

    def __init__(self):
        self.stack: list = []


state = _State()

# Default graphs entered in any thread and not yet left. While it is 0, eager dispatch knows
# there is no default graph without reading the thread-local state.
graphs_open = 0
_count_lock = threading.Lock()


def push(graph) -> None:
    global graphs_open
    with _count_lock:
        graphs_open += 1
        _eager_modes.note("graphs", True)
    state.stack.append(graph)
    state.graph = graph


def pop(graph) -> None:
    global graphs_open
    if not state.stack or state.stack[-1] is not graph:
        raise GraphError("graph contexts exited out of order")
    state.stack.pop()
    state.graph = state.stack[-1] if state.stack else None
    with _count_lock:
        graphs_open -= 1
        _eager_modes.note("graphs", graphs_open > 0)


def get_default_graph():
    """The graph that ops are added to now, or None in eager mode."""
    return state.graph


# --- source ops: placeholder, constant, variable -------------------------------------------
def _no_forward(*args, **attrs):
    raise GraphError("a placeholder has no value of its own: feed it in sess.run(feed_dict=...)")


placeholder_op = register("placeholder", forward=_no_forward,
                          infer=lambda shape, dtype: (shape, dtype), kind="source",
                          onnx=onnx_rules.bound)
constant_op = register("constant", forward=lambda value: value,
                       infer=lambda value: (value.shape, value.dtype), kind="source",
                       onnx=onnx_rules.constant)
variable_op = register("variable", forward=lambda ref: ref._data,
                       infer=lambda ref: (ref._data.shape, ref._data.dtype), kind="source",
                       onnx=onnx_rules.variable)


def _graph_for(inputs):
    graph = state.graph
    if graph is not None:
        return graph
    for t in inputs:
        if t._node is not None:
            return t._node.graph
    raise GraphError("internal: no graph to add to")


def to_node(graph, t):
    """The node of `graph` standing for Tensor `t` (capturing eager tensors on first use)."""
    node = t._node
    if node is not None:
        if node.graph is graph:
            return node
        resolve = getattr(graph, "resolve_outer", None)
        if resolve is not None:
            return resolve(node)
        raise GraphError(
            f"tensor {node.name!r} belongs to another graph ({node.graph.name!r}) than the one "
            f"being built ({graph.name!r})"
        )
    if graph.parent is not None and hasattr(graph, "resolve_outer"):
        # a sub-graph: eager tensors live in the root graph, and are captured from there
        return graph.resolve_outer(to_node(graph.parent, t))
    key = id(t)
    entry = graph._captured.get(key)  # (tensor, node): holding the tensor keeps its id unique
    node = None if entry is None or entry[0] is not t else entry[1]
    if node is None:
        if isinstance(t, Variable) or (t.requires_grad and t.grad_fn is None):
            graph.note_array(t._data)  # state: the program runs where it lives
            name = getattr(t, "var_name", None) or "variable"
            node = graph.add_node(variable_op, (), {"ref": t}, t._data.shape, t._data.dtype, name)
        else:
            node = graph.add_node(constant_op, (), {"value": t._data}, t._data.shape, t._data.dtype,
                                  "constant")
        graph._captured[key] = (t, node)
    return node


def capture_as_variable(graph, t):
    """The node of eager tensor `t` as a `variable` (state that assignments may change), even if
    its capture rule would make it a constant (a buffer that an assignment writes)."""
    root = graph
    while root.parent is not None:
        root = root.parent
    node = to_node(root, t)
    if node.op is constant_op:  # read as a constant so far: it is state after all
        node.op = variable_op
        node.attrs = {"ref": t}
        root.version += 1
    return node


def add(op, inputs, attrs):
    """Add `op(inputs)` to the current graph; shape/dtype inference runs now (build time)."""
    graph = _graph_for(inputs)
    nodes = [to_node(graph, t) for t in inputs]
    specs = [Spec(n.shape, n.dtype) for n in nodes]
    try:
        shape, dtype = op.infer(*specs, **attrs)
    except DongjingError as exc:
        where = user_source_line()
        if where and where not in str(exc):
            exc.args = (f"{exc.args[0]} (building the graph at {where})",) + exc.args[1:]
        raise
    node = graph.add_node(op, nodes, attrs, shape, dtype)
    return Tensor._symbolic(node)


def _is_dtype(value) -> bool:
    """Whether a placeholder argument names a dtype (a shape is an int or a sequence)."""
    return isinstance(value, (str, type)) or dtypes.is_dtype(value)


def _placeholder_arguments(args: tuple, shape, dtype, name):
    """(shape, dtype, name) from positional arguments in either order plus keywords."""
    if len(args) > 3:
        raise GraphError(f"dj.placeholder takes at most 3 positional arguments (shape, dtype, "
                         f"name in either order), got {len(args)}")
    if len(args) == 3:
        args, given_name = args[:2], args[2]
        if name is not None:
            raise GraphError("dj.placeholder got two names")
        name = given_name
    for value in args:
        if _is_dtype(value):
            if dtype is not None:
                raise GraphError(f"dj.placeholder got two dtypes ({dtype!r}, {value!r}): give "
                                 "one shape and one dtype")
            dtype = value
        else:
            if shape is not None:
                raise GraphError(f"dj.placeholder got two shapes ({shape!r}, {value!r}): give "
                                 "one shape and one dtype")
            shape = value
    return shape, dtype, name


def placeholder(*args: Sequence[int | None] | int | DTypeLike,
                shape: Sequence[int | None] | int | None = None,
                dtype: DTypeLike | None = None, name: str | None = None) -> Tensor:
    """A graph input to be fed in `sess.run(feed_dict=...)`; `None` dims take any size.

    Either order works: `dj.placeholder((None, 3), dj.float32)` or, as in TensorFlow,
    `dj.placeholder(dj.float32, (None, 3))` and `dj.placeholder(dj.float32, shape=(None, 3))`.
    """
    shape, dtype, name = _placeholder_arguments(args, shape, dtype, name)
    if shape is None:
        raise GraphError(
            "dj.placeholder needs a shape (use None for dims of any size, e.g. (None, 3)); "
            "placeholders of unknown rank are available as tf.placeholder in "
            "dongjing.compat.v1"
        )
    graph = state.graph
    if graph is None:
        raise GraphError(
            "dj.placeholder needs a graph: create it inside `with dj.Graph() as g:` "
            "(or `with g.as_default():`)"
        )
    if dtypes.is_integer_scalar(shape):
        shape = (shape,)
    try:
        shape = tuple(None if d is None or d == -1 else int(d) for d in shape)
    except TypeError:
        raise GraphError(f"dj.placeholder: shape {shape!r} is not a sequence of ints and "
                         "None") from None
    dtype = dtypes.as_dtype(dtype or dtypes.float32)
    node = graph.add_node(placeholder_op, (), {"shape": shape, "dtype": dtype}, shape, dtype,
                          name or "placeholder")
    return Tensor._symbolic(node)


def constant(value: TensorLike, dtype: DTypeLike | None = None, name: str | None = None
             ) -> Tensor:
    """A constant: a node inside a graph, an ordinary tensor eagerly."""
    array = to_array(value, dtype)
    graph = state.graph
    if graph is None:
        return Tensor._make(array)
    node = graph.add_node(constant_op, (), {"value": array}, array.shape, array.dtype,
                          name or "constant")
    return Tensor._symbolic(node)

