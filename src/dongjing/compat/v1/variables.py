"""tf.Variable: dongjing's Variable with TF1's construction (initial values evaluated by the
initializer, guarded against uninitialized Variables), names, graph-building operators,
assignments that give their value, initializers and the variable collections."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import numpy as np

from ... import ops as _ops
from ...errors import GraphError
from ...graph import builder
from ...graph.variable import Variable as _DjVariable
from ...ops.state import assign as _dj_assign
from ...ops.state import group as _dj_group
from ...tensor import Tensor
from . import scopes as _scopes_module
from . import session as _session_module
from .deferred import Deferred
from .dtypes import to_array
from .graph_collections import GraphKeys, get_collection, register_variable
from .graph_state import state_of
from .graphs import building, get_default_graph, tf_function
from .scopes import name_of_variable
from .session import Operation, _session, eval_tensor, get_shape
from .unsupported import not_provided

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from ...types import DTypeLike, TensorLike
    from .session import Session


class Variable(_DjVariable):
    """`tf.Variable(initial_value, trainable=True, name=None, dtype=None)`.

    As in TF 1.x, its value lives in each Session: a Session reads it only after running its
    initializer (or assigning it), and two Sessions hold two values. The initial value may be a
    graph expression, evaluated when the initializer runs (a random one draws again); read
    there, another Variable stands for its `initialized_value()`, so `tf.Variable(W * 2)`
    starts from twice W's initial value. Operators on it build graph ops in its graph.
    A `dj.Session` on the same graph sees one shared value (dongjing's own semantics).
    """

    __slots__ = ("_initial", "_graph", "_flag", "_guarded")

    def __init__(self, initial_value: TensorLike | Callable[[], TensorLike] | None = None,
                 trainable: bool = True, collections: Sequence[str] | None = None,
                 validate_shape: bool = True, caching_device: None = None,
                 name: str | None = None, variable_def: None = None,
                 dtype: DTypeLike | None = None, expected_shape: None = None,
                 import_scope: None = None, constraint: None = None,
                 **unsupported: object) -> None:
        exact_name = unsupported.pop("_exact_name", False)
        for feature, given in [("caching_device", caching_device),
                               ("variable_def", variable_def), ("import_scope", import_scope),
                               ("constraint", constraint), ("expected_shape", expected_shape)]:
            if given is not None:
                not_provided(f"tf.Variable({feature}=...)")
        if not validate_shape:
            not_provided("tf.Variable(validate_shape=False)")
        for feature, given in unsupported.items():
            if given is not None:
                not_provided(f"tf.Variable({feature}=...)")
        if initial_value is None:
            raise GraphError("tf.Variable needs an initial_value")
        graph = get_default_graph()
        if callable(initial_value):
            with building():
                initial_value = initial_value()
        if isinstance(initial_value, Deferred):
            raise GraphError("tf.Variable: the initial value depends on an unknown-rank "
                             "placeholder; give the placeholder a shape")
        full_name = name_of_variable(graph, name or "Variable", exact_name)
        if isinstance(initial_value, Tensor) and initial_value._node is not None:
            graph = initial_value._node.graph
            with graph.as_default():
                initial = initial_value if dtype is None else _ops.cast(initial_value, dtype)
                initial = guarded(initial)
            if any(d is None for d in initial.shape):
                raise GraphError(f"tf.Variable {full_name!r}: the initial value's shape "
                                 f"{tuple(initial.shape)} is not fully known")
            array = np.zeros(initial.shape, initial.dtype)
        else:
            array = to_array(initial_value, dtype)
            initial = array.copy()
        super().__init__(array, name=full_name, trainable=trainable)
        self._initial = initial
        self._graph = graph
        self._flag = _DjVariable(np.array(False), name=f"{full_name}/is_initialized",
                                 trainable=False)
        self._guarded = None
        state = state_of(graph)
        state.variables.append(self)
        register_variable(graph, self, collections, trainable)

    @property
    def name(self) -> str:
        """TF's tensor name: `scope/name:0`."""
        return f"{self.var_name}:0"

    @property
    def op(self):
        """The variable's op (its `name` is the variable's name without `:0`)."""
        return _VariableOp(self.var_name)

    # --- reading ------------------------------------------------------------------------------
    @property
    def graph(self):
        """The graph that was the default when this Variable was created."""
        return self._graph

    @property
    def initial_value(self):
        """The initial value (a graph tensor, evaluated again in each run that needs it)."""
        with self._graph.as_default():
            return _ops.clone(self._initial_tensor())

    def _initial_tensor(self) -> Tensor:
        if isinstance(self._initial, Tensor):
            return self._initial
        return builder.constant(self._initial)

    def initialized_value(self) -> Tensor:
        """This Variable's value if the Session has initialized it, else its initial value
        (TF's way to initialize one Variable from another's initial value)."""
        if self._guarded is None:
            with self._graph.as_default():
                flag = Tensor._symbolic(builder.to_node(self._graph, self._flag))
                read = self.value()
                guard = _ops.where(flag, read, self._initial_tensor())
            state_of(self._graph).guards[id(guard._node)] = (guard._node, read._node)
            self._guarded = guard
        return self._guarded

    def load(self, value: TensorLike, session: Session | None = None) -> None:
        """Set this Variable's value in `session` (default: the default session) directly."""
        _session(session).load_variable(self, value)

    def value(self) -> Tensor:
        """A graph tensor reading this Variable."""
        with building() as graph:
            return Tensor._symbolic(builder.to_node(graph, self))

    read_value = value

    eval = eval_tensor
    get_shape = get_shape

    # --- writing ------------------------------------------------------------------------------
    def assign(self, value: TensorLike, use_locking: bool | None = None, name: str | None = None,
               read_value: bool = True) -> AssignOp | Deferred:
        """An op setting this Variable to `value` when run (fetching it gives that value)."""
        return assign(self, value)

    def assign_add(self, delta: TensorLike, use_locking: bool | None = None,
                   name: str | None = None,
                   read_value: bool = True) -> AssignOp | Deferred:
        """An op adding `delta` to this Variable when run."""
        return assign_add(self, delta)

    def assign_sub(self, delta: TensorLike, use_locking: bool | None = None,
                   name: str | None = None,
                   read_value: bool = True) -> AssignOp | Deferred:
        """An op subtracting `delta` from this Variable when run."""
        return assign_sub(self, delta)

    @property
    def initializer(self) -> Operation:
        """An op setting this Variable to its initial value (evaluated again) when run."""
        return variables_initializer([self])

    # TF1 compares variables by identity (so `v in var_list` works)
    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<tf.Variable {self.var_name!r} shape={self.shape} dtype={self.dtype}>"


def _operator(fn, reflected: bool):
    def method(self, other):
        if isinstance(other, Deferred):
            return NotImplemented  # the Deferred's reflected operator records the call
        with building((self, other)):
            return fn(other, self) if reflected else fn(self, other)

    return method


for _name, _fn in [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("matmul", operator.matmul),
                   ("pow", operator.pow)]:
    setattr(Variable, f"__{_name}__", _operator(getattr(Tensor, f"__{_name}__"), False))
    setattr(Variable, f"__r{_name}__", _operator(getattr(Tensor, f"__{_name}__"), True))
for _name in ("lt", "le", "gt", "ge", "getitem"):
    setattr(Variable, f"__{_name}__", _operator(getattr(Tensor, f"__{_name}__"), False))
for _name in ("neg", "abs"):
    setattr(Variable, f"__{_name}__",
            (lambda f: lambda self: _in_graph(f, self))(getattr(Tensor, f"__{_name}__")))


def _in_graph(fn, *args):
    with building(args):
        return fn(*args)


# --- assignment and initializers ---------------------------------------------------------------
def _target(ref, what: str):
    if not isinstance(ref, _DjVariable):
        raise GraphError(f"{what} needs a tf.Variable to assign to, got {type(ref).__name__}")
    return ref


@tf_function
def assign(ref: Tensor, value: TensorLike, validate_shape: bool | None = None,
           use_locking: bool | None = None, name: str | None = None) -> AssignOp:
    """An op setting Variable `ref` to `value` when run; fetching it gives the value set."""
    return _assign_op(_target(ref, "tf.assign"), value, name)


@tf_function
def assign_add(ref: Tensor, value: TensorLike, use_locking: bool | None = None,
               name: str | None = None) -> AssignOp:
    """An op adding `value` to Variable `ref` when run; fetching it gives the new value."""
    ref = _target(ref, "tf.assign_add")
    return _assign_op(ref, _read(ref) + value, name)


@tf_function
def assign_sub(ref: Tensor, value: TensorLike, use_locking: bool | None = None,
               name: str | None = None) -> AssignOp:
    """An op subtracting `value` from Variable `ref` when run; fetching it gives the new
    value."""
    ref = _target(ref, "tf.assign_sub")
    return _assign_op(ref, _read(ref) - value, name)


class AssignOp(Operation):
    """A TF1 assignment: run for its effect, and fetching it gives the value assigned."""

    __slots__ = ("value",)

    def __init__(self, effect, value, name=None):
        super().__init__(effect, name)
        self.value = value


def _assign_op(ref, value, name) -> AssignOp:
    effects = [_dj_assign(ref, value)]
    value = effects[0]._node.inputs[1]
    value = Tensor._symbolic(value)
    if value.dtype != ref.dtype:
        value = _ops.cast(value, ref.dtype)
    if tuple(value.shape) != tuple(ref.shape):
        value = _ops.broadcast_to(value, ref.shape)
    if isinstance(ref, Variable):
        effects.append(_dj_assign(ref._flag, True))  # assigning initializes, as in TF
    return AssignOp(_dj_group(*effects), value, name)


def _read(var):
    graph = builder.get_default_graph()
    return Tensor._symbolic(builder.to_node(graph, var))


def variables_initializer(var_list: Iterable[Variable], name: str = "init") -> Operation:
    """One op setting each Variable of `var_list` to its initial value when run."""
    var_list = list(var_list)
    if not var_list:
        return Operation(None, name)
    graph = var_list[0].graph if isinstance(var_list[0], Variable) else get_default_graph()
    with graph.as_default():
        effects = []
        for var in var_list:
            if isinstance(var, Variable):
                effects += [_dj_assign(var, var._initial), _dj_assign(var._flag, True)]
            else:
                effects.append(_dj_assign(var, var._data.copy()))
        return Operation(_dj_group(*effects), name)


def is_variable_initialized(variable: Variable) -> Tensor:
    """A boolean tensor: whether the running Session has initialized `variable`."""
    with variable._graph.as_default():
        return Tensor._symbolic(builder.to_node(variable._graph, variable._flag))


def guarded(initial: Tensor) -> Tensor:
    """`initial` with each tf.Variable it reads replaced by that Variable's
    `initialized_value()`, as TF 1.x guards initial values against uninitialized dependencies."""
    memo: dict = {}
    node = _guard_node(initial._node, memo)
    return initial if node is initial._node else Tensor._symbolic(node)


def _guard_node(node, memo: dict):
    done = memo.get(node)
    if done is not None:
        return done
    if node.op.name == "variable" and isinstance(node.attrs.get("ref"), Variable):
        out = node.attrs["ref"].initialized_value()._node
    elif not node.inputs or id(node) in state_of(node.graph).guards:
        out = node
    else:
        inputs = [_guard_node(i, memo) for i in node.inputs]
        if all(a is b for a, b in zip(inputs, node.inputs)):
            out = node
        elif node.op.kind in ("control", "effect"):
            raise GraphError(f"tf.Variable: an initial value reading another Variable through "
                             f"{node.op.name!r} is not supported; use initialized_value()")
        else:
            out = node.graph.add_node(node.op, inputs, dict(node.attrs), node.shape,
                                      node.dtype, node.name)
    memo[node] = out
    return out


def global_variables(scope: str | None = None) -> list[Variable]:
    """The tf.Variables of the default graph's GLOBAL_VARIABLES collection (creation order),
    those whose name starts with `scope` when given."""
    return get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def trainable_variables(scope: str | None = None) -> list[Variable]:
    """The default graph's TRAINABLE_VARIABLES (whose name starts with `scope` when given)."""
    return get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope: str | None = None) -> list[Variable]:
    """The default graph's LOCAL_VARIABLES."""
    return get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def model_variables(scope: str | None = None) -> list[Variable]:
    """The default graph's MODEL_VARIABLES."""
    return get_collection(GraphKeys.MODEL_VARIABLES, scope)


class _VariableOp:
    """`variable.op`: what TF code reads of a variable's op (its name)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<tf.Operation {self.name!r} type=VariableV2>"


def global_variables_initializer() -> Operation:
    """One op setting every Variable of the default graph (so far) to its initial value."""
    return variables_initializer(global_variables())


def local_variables_initializer() -> Operation:
    """One op initializing the default graph's LOCAL_VARIABLES."""
    return variables_initializer(local_variables(), "init_local")


initialize_all_variables = global_variables_initializer  # the pre-1.0 spelling


_scopes_module._late.Variable = _session_module._late.Variable = Variable  # (they sit below)
