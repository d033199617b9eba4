"""tf.name_scope, tf.variable_scope and tf.get_variable: TF1's names and variable sharing.

A name scope prefixes the names of the graph nodes (and tf.Variables) made inside it; a
variable scope names the variables `get_variable` makes or shares (`reuse=True` shares,
`AUTO_REUSE` creates or shares) and gives them default initializers, regularizers and dtypes.
"""

from __future__ import annotations

import types
from collections import Counter
from contextlib import contextmanager

import numpy as np

from .dtypes import as_dtype
from .graph_collections import GraphKeys, add_to_collection
from .graph_state import state_of
from .graphs import get_default_graph
from .initializers import glorot_uniform_initializer, zeros_initializer
from .unsupported import not_provided

# tf.Variable, set by variables.py when it loads (it imports this module)
_late = types.SimpleNamespace(Variable=None)

AUTO_REUSE = "AUTO_REUSE"  # reuse a variable when it exists, else create it


def _counts(graph, key: str) -> Counter:
    state = state_of(graph)
    counter = state.__dict__.get(key)
    if counter is None:
        counter = Counter()
        setattr(state, key, counter)
    return counter


def _unique(graph, key: str, base: str) -> str:
    """`base`, then `base_1`, `base_2`, ... within `key`'s names, as TF makes names unique."""
    counts = _counts(graph, key)
    n = counts[base]
    counts[base] += 1
    name = base if n == 0 else f"{base}_{n}"
    while name != base and counts[name]:
        n += 1
        counts[base] += 1
        name = f"{base}_{n}"
    if name != base:
        counts[name] += 1
    return name


def name_of_variable(graph, name: str, exact: bool = False) -> str:
    """The full name of a new tf.Variable, unique in the graph (TF's `W`, `W_1`, ...): inside
    the current name scope, or (`exact`: get_variable's full name) outside it."""
    prefix = "" if exact else state_of(graph).name_scope
    return _unique(graph, "_op_names", prefix + name)


@contextmanager
def name_scope(name, default_name=None, values=None):
    """Prefix the graph nodes and tf.Variables made inside with `name/` (made unique: `name_1/`
    the second time; a name ending in `/` is taken as it is; None goes back to the top)."""
    graph = get_default_graph()
    state = state_of(graph)
    previous = state.name_scope
    if name is None and default_name is None:
        scope = ""
    elif isinstance(name, str) and name.endswith("/"):
        scope = name
    else:
        base = previous + (name if name else default_name)
        scope = _unique(graph, "_op_names", base) + "/"
    state.name_scope = scope
    old_prefix = getattr(graph, "name_prefix", "")
    graph.name_prefix = scope
    try:
        yield scope
    finally:
        state.name_scope = previous
        graph.name_prefix = old_prefix


class VariableScope:
    """A variable scope: the name, reuse mode and defaults `get_variable` uses inside it."""

    def __init__(self, reuse, name: str = "", initializer=None, regularizer=None, dtype=None,
                 original_name_scope: str = ""):
        self.name = name
        self.reuse = reuse
        self.initializer = initializer
        self.regularizer = regularizer
        self.dtype = dtype
        self.original_name_scope = original_name_scope

    def reuse_variables(self) -> None:
        """Share the variables of this scope from now on (reuse=True)."""
        self.reuse = True

    def set_initializer(self, initializer) -> None:
        """The default initializer of get_variable in this scope."""
        self.initializer = initializer

    def set_regularizer(self, regularizer) -> None:
        """The default regularizer of get_variable in this scope."""
        self.regularizer = regularizer

    def get_variable(self, name, *args, **kwargs):
        """get_variable in this scope."""
        with variable_scope(self):
            return get_variable(name, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<tf.VariableScope {self.name!r} reuse={self.reuse}>"


def get_variable_scope() -> VariableScope:
    """The current variable scope (the root scope, named "", at the top)."""
    scopes = state_of(get_default_graph()).variable_scopes
    if not scopes:
        scopes.append(VariableScope(False))
    return scopes[-1]


@contextmanager
def variable_scope(name_or_scope, default_name=None, values=None, initializer=None,
                   regularizer=None, caching_device=None, partitioner=None, custom_getter=None,
                   reuse=None, dtype=None, use_resource=None, constraint=None,
                   auxiliary_name_scope=True):
    """Open a variable scope (and the name scope of the same name): get_variable inside names
    its variables `scope/name`; `reuse=True` (inherited by inner scopes) shares existing ones,
    `tf.AUTO_REUSE` shares or creates. A VariableScope object re-enters that scope."""
    for feature, given in [("partitioner", partitioner), ("custom_getter", custom_getter),
                           ("constraint", constraint)]:
        if given is not None:
            not_provided(f"tf.variable_scope({feature}=...)")
    graph = get_default_graph()
    parent = get_variable_scope()
    if name_or_scope is None and default_name is None:
        raise ValueError("tf.variable_scope needs name_or_scope or default_name")
    if isinstance(name_or_scope, VariableScope):
        base = name_or_scope
        full, name_scope_of = base.name, base.original_name_scope
    else:
        short = name_or_scope
        if short is None:
            prefix = parent.name + "/" if parent.name else ""
            short = _unique(graph, "_var_scopes", prefix + default_name)[len(prefix):]
        else:
            counts = _counts(graph, "_var_scopes")
            opened = (parent.name + "/" if parent.name else "") + short
            counts[opened] += 1
            for key in [k for k in counts if k.startswith(opened + "/")]:
                del counts[key]  # TF's close_variable_subscopes: default names start over
        base = parent
        full = f"{parent.name}/{short}" if parent.name else short
        name_scope_of = None
    own = reuse
    if own is None and isinstance(name_or_scope, VariableScope):
        own = name_or_scope.reuse
    if parent.reuse is True or own is True:
        inherited = True
    elif AUTO_REUSE in (parent.reuse, own):
        inherited = AUTO_REUSE
    else:
        inherited = False
    scope = VariableScope(
        inherited, full,
        initializer if initializer is not None else base.initializer,
        regularizer if regularizer is not None else base.regularizer,
        dtype if dtype is not None else base.dtype)
    stack = state_of(graph).variable_scopes
    stack.append(scope)
    try:
        if not auxiliary_name_scope:
            scope.original_name_scope = name_scope_of or ""
            yield scope
        elif name_scope_of is not None:
            with name_scope(name_scope_of or None):
                scope.original_name_scope = name_scope_of
                yield scope
        else:
            short = full.rsplit("/", 1)[-1]
            with name_scope(short) as opened:
                scope.original_name_scope = opened
                yield scope
    finally:
        stack.pop()


def get_variable(name: str, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    """The variable `scope/name`: made now (initialized by `initializer`, else the scope's,
    else Glorot-uniform for floats and zeros otherwise), or the existing one when the scope
    reuses. Making one that exists, or reusing one that does not, raises ValueError, as TF
    does."""
    Variable = _late.Variable  # tf.Variable: variables.py is built on this module
    for feature, given in [("partitioner", partitioner), ("custom_getter", custom_getter),
                           ("constraint", constraint), ("caching_device", caching_device)]:
        if given is not None:
            not_provided(f"tf.get_variable({feature}=...)")
    graph = get_default_graph()
    scope = get_variable_scope()
    full = f"{scope.name}/{name}" if scope.name else name
    existing = _by_name(graph).get(full)
    if scope.reuse is True or (scope.reuse == AUTO_REUSE and existing is not None):
        if existing is None:
            raise ValueError(f"Variable {full} does not exist, or was not created with "
                             "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                             "VarScope?")
        if shape is not None and tuple(shape) != tuple(existing.shape):
            raise ValueError(f"Trying to share variable {full}, but specified shape "
                             f"{tuple(shape)} and found shape {tuple(existing.shape)}.")
        return existing
    if existing is not None:
        raise ValueError(f"Variable {full} already exists, disallowed. Did you mean to set "
                         "reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
    dtype = as_dtype(dtype if dtype is not None else scope.dtype or "float32")
    initializer = initializer if initializer is not None else scope.initializer
    if initializer is None:
        initializer = (glorot_uniform_initializer() if dtype.kind == "f"
                       else zeros_initializer())
    if callable(initializer):
        if shape is None:
            raise ValueError(f"get_variable {full}: the shape is needed with an initializer "
                             "function")
        shape = [int(d) for d in shape]
        with name_scope(full + "/Initializer/"):
            initial = initializer(shape, dtype=dtype)
    else:  # a value (array or tensor): its own shape
        if shape is not None:
            raise ValueError(f"get_variable {full}: if the initializer is a constant, do not "
                             "specify a shape")
        initial = initializer
        if not hasattr(initial, "shape"):
            initial = np.asarray(initial, dtype)
    with name_scope(None):
        var = Variable(initial, trainable=True if trainable is None else trainable,
                       collections=collections, name=full, dtype=dtype,
                       validate_shape=validate_shape, _exact_name=True)
    _by_name(graph)[full] = var
    regularizer = regularizer if regularizer is not None else scope.regularizer
    if regularizer is not None:
        with name_scope(full + "/Regularizer/"):
            loss = regularizer(var)
        if loss is not None:
            add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss, graph)
    return var


def _by_name(graph) -> dict:
    state = state_of(graph)
    table = state.__dict__.get("_get_variables")
    if table is None:
        table = state._get_variables = {}
    return table
