"""tf.Variable: dongjing's Variable (state holding its own value) with TF1's construction,
graph-building operators, assignment methods and initializers."""

from __future__ import annotations

import operator

from ... import ops as _ops
from ...errors import FeedError, GraphError
from ...graph import builder
from ...graph.variable import Variable as _DjVariable
from ...ops.state import assign as _dj_assign
from ...ops.state import group as _dj_group
from ...runtime.session import Session as _DjSession
from ...tensor import Tensor
from .deferred import Deferred
from .dtypes import to_array
from .graphs import building, get_default_graph, state_of, tf_function
from .session import Operation, eval_tensor, get_shape
from .unsupported import not_provided


class Variable(_DjVariable):
    """`tf.Variable(initial_value, trainable=True, name=None, dtype=None)`.

    It holds its value across runs (as dj.Variable); operators on it build graph ops in the
    default graph (so gradients reach it); `global_variables_initializer()` (re)sets it to its
    initial value, evaluated again (a random initial value draws again). It can be read before
    the initializer runs (TensorFlow would raise): it holds its initial value from creation.
    """

    __slots__ = ("_initial", "_graph")

    def __init__(self, initial_value=None, trainable: bool = True, collections=None,
                 validate_shape: bool = True, caching_device=None, name: str | None = None,
                 variable_def=None, dtype=None, expected_shape=None, import_scope=None,
                 constraint=None, **unsupported):
        for feature, given in [("collections", collections), ("caching_device", caching_device),
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
        if callable(initial_value):
            initial_value = initial_value()
        graph = get_default_graph()
        if isinstance(initial_value, Deferred):
            raise GraphError("tf.Variable: the initial value depends on an unknown-rank "
                             "placeholder; initial values cannot depend on placeholders")
        if isinstance(initial_value, Tensor) and initial_value._node is not None:
            initial = initial_value if dtype is None else _ops.cast(initial_value, dtype)
            try:
                array = _DjSession(initial._node.graph, optimize=0).run(initial)
            except FeedError as exc:
                raise GraphError(f"tf.Variable: the initial value cannot depend on placeholders "
                                 f"({exc})") from None
        else:
            array = to_array(initial_value, dtype)
            initial = array.copy()
        super().__init__(array, name=name or "Variable", trainable=trainable)
        self._initial = initial
        self._graph = graph
        state_of(graph).variables.append(self)

    # --- reading ------------------------------------------------------------------------------
    @property
    def graph(self):
        """The graph that was the default when this Variable was created."""
        return self._graph

    @property
    def initial_value(self):
        """The initial value (a graph tensor)."""
        with building((self._initial,)):
            return _ops.clone(self._initial)

    def value(self):
        """A graph tensor reading this Variable."""
        with building() as graph:
            return Tensor._symbolic(builder.to_node(graph, self))

    read_value = value

    eval = eval_tensor
    get_shape = get_shape

    # --- writing ------------------------------------------------------------------------------
    def assign(self, value, use_locking=None, name=None, read_value=True):
        """An op setting this Variable to `value` when run (fetching it gives None)."""
        return assign(self, value)

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        """An op adding `delta` to this Variable when run."""
        return assign_add(self, delta)

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
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
def assign(ref, value, validate_shape=None, use_locking=None, name=None) -> Operation:
    """An op setting Variable `ref` to `value` when run."""
    return Operation(_dj_assign(_target(ref, "tf.assign"), value), name)


@tf_function
def assign_add(ref, value, use_locking=None, name=None) -> Operation:
    """An op adding `value` to Variable `ref` when run."""
    ref = _target(ref, "tf.assign_add")
    return Operation(_dj_assign(ref, _read(ref) + value), name)


@tf_function
def assign_sub(ref, value, use_locking=None, name=None) -> Operation:
    """An op subtracting `value` from Variable `ref` when run."""
    ref = _target(ref, "tf.assign_sub")
    return Operation(_dj_assign(ref, _read(ref) - value), name)


def _read(var):
    graph = builder.get_default_graph()
    return Tensor._symbolic(builder.to_node(graph, var))


def variables_initializer(var_list, name: str = "init") -> Operation:
    """One op setting each Variable of `var_list` to its initial value when run."""
    var_list = list(var_list)
    if not var_list:
        return Operation(None, name)
    graph = var_list[0].graph if isinstance(var_list[0], Variable) else get_default_graph()
    with graph.as_default():
        effects = []
        for var in var_list:
            initial = var._initial if isinstance(var, Variable) else var._data.copy()
            effects.append(_dj_assign(var, initial))
        return Operation(_dj_group(*effects), name)


def global_variables() -> list:
    """The tf.Variables created in the default graph, in creation order."""
    return list(state_of(get_default_graph()).variables)


def trainable_variables() -> list:
    """The trainable tf.Variables of the default graph."""
    return [v for v in global_variables() if v.trainable]


def global_variables_initializer() -> Operation:
    """One op setting every Variable of the default graph (so far) to its initial value."""
    return variables_initializer(global_variables())


def local_variables_initializer() -> Operation:
    """There are no local variables here: an op that does nothing."""
    return Operation(None, "init_local")


initialize_all_variables = global_variables_initializer  # the pre-1.0 spelling
