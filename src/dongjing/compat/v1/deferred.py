"""Unknown-rank values (`tf.placeholder("float")`): recorded, then built per rank at run time.

dongjing's graphs infer every node's rank when it is built. A placeholder without a shape has
no rank yet, so everything computed from it is recorded instead (which tf function or operator,
on which arguments), as a `Deferred`. When a Session feeds the placeholder, the record is
replayed into the graph with a placeholder of the fed rank, through the same public functions,
once per rank signature: a scalar feed and a vector feed of one placeholder each get their own,
correctly typed nodes, and Variables (and optimizer state) are shared by all of them.
"""

from __future__ import annotations

import itertools
import operator

import numpy as np

from ...errors import FeedError, GraphError
from ...graph import builder
from ...graph.builder import placeholder
from ...tensor import Tensor
from .graph_state import state_of

_ids = itertools.count()


def _unusable(self):
    raise GraphError(
        f"{self._describe()} has unknown rank (it comes from tf.placeholder without a shape): "
        "tf.* functions and operators accept it and it is built when a Session feeds the "
        "placeholder, but dongjing functions (dj.*) and Tensor methods need a known rank; give "
        "the placeholder a shape, e.g. tf.placeholder(tf.float32, [None])"
    )


class Deferred(Tensor):
    """A value computed from an unknown-rank placeholder: a placeholder itself (a leaf) or a
    recorded call `fn(*args, **kwargs)` on values of which at least one is Deferred."""

    __slots__ = ("_fn", "_args", "_kwargs", "_label", "_graph", "_dtype", "_id")
    __array_ufunc__ = None  # NumPy hands `array op deferred` to our reflected operators
    __hash__ = object.__hash__

    data = property(_unusable)
    _node = property(_unusable)
    shape = property(_unusable)

    @classmethod
    def _new(cls, fn, args, kwargs, label, graph, dtype=None) -> Deferred:
        d = object.__new__(cls)
        d._fn, d._args, d._kwargs, d._label = fn, args, kwargs, label
        d._graph, d._dtype, d._id = graph, dtype, next(_ids)
        d._data = None  # no value: dispatch's eager checks fail over to `_node`, which refuses
        d.requires_grad = False
        d.grad_fn = None
        d._version = [0]
        return d

    @classmethod
    def leaf(cls, dtype, name: str, graph) -> Deferred:
        """A placeholder of unknown rank."""
        return cls._new(None, (), {}, name, graph, dtype)

    @property
    def is_placeholder(self) -> bool:
        """Whether this is the unknown-rank placeholder itself (not a value computed from one)."""
        return self._fn is None

    @property
    def dtype(self):
        """The placeholder's dtype (a computed value's dtype is known only once it is built)."""
        if self._dtype is None:
            _unusable(self)
        return self._dtype

    @property
    def name(self) -> str:
        """The placeholder's name, or the tf function that computes this value."""
        return self._label

    @property
    def graph(self):
        """The graph this value will be built in."""
        return self._graph

    def get_shape(self):
        """Not known before a feed: raises a GraphError saying so."""
        _unusable(self)

    def _describe(self) -> str:
        what = "placeholder" if self._fn is None else "tensor computed by"
        return f"{what} {self._label!r}"

    def __repr__(self) -> str:
        if self._fn is None:
            return f"<tf.Tensor {self._label!r} shape=<unknown> dtype={self._dtype}>"
        return f"<tf.Tensor from {self._label!r} shape=<unknown>>"

    # TF1 compares tensors by identity (tf.equal compares values)
    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    def __bool__(self):
        raise GraphError(f"using the {self._describe()} as a Python bool: its value is known "
                         "only when the graph runs; use tf.cond / tf.while_loop")

    def __iter__(self):
        raise GraphError(f"iterating over the {self._describe()}: its length is unknown until "
                         "it is fed")

    def __len__(self):
        _unusable(self)


def _binary(fn, name: str):
    def forward(self, other):
        return record(fn, (self, other), {}, name)

    def reflected(self, other):
        return record(fn, (other, self), {}, name)

    return forward, reflected


for _dunder, _fn in [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                     ("truediv", operator.truediv), ("matmul", operator.matmul),
                     ("pow", operator.pow), ("and", operator.and_), ("or", operator.or_)]:
    _f, _r = _binary(_fn, _dunder)
    setattr(Deferred, f"__{_dunder}__", _f)
    setattr(Deferred, f"__r{_dunder}__", _r)
for _dunder, _fn in [("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
                     ("ge", operator.ge), ("getitem", operator.getitem)]:
    setattr(Deferred, f"__{_dunder}__", _binary(_fn, _dunder)[0])
for _dunder, _fn in [("neg", operator.neg), ("pos", operator.pos), ("abs", operator.abs),
                     ("invert", operator.invert)]:
    setattr(Deferred, f"__{_dunder}__", (lambda f, n: lambda self: record(f, (self,), {}, n))(
        _fn, _dunder))


def has_deferred(values) -> bool:
    """Whether a (nested list/tuple/dict) argument list holds a Deferred."""
    for value in values:
        if isinstance(value, Deferred):
            return True
        if isinstance(value, (list, tuple)) and has_deferred(value):
            return True
        if isinstance(value, dict) and has_deferred(value.values()):
            return True
    return False


def _first_graph(values):
    for value in values:
        if isinstance(value, Deferred):
            return value._graph
        if isinstance(value, (list, tuple, dict)):
            found = _first_graph(value.values() if isinstance(value, dict) else value)
            if found is not None:
                return found
    return None


def record(fn, args, kwargs, label: str) -> Deferred:
    """A Deferred standing for `fn(*args, **kwargs)`, to be called when the ranks are known."""
    graph = _first_graph(args) or _first_graph(kwargs.values())
    return Deferred._new(fn, tuple(args), dict(kwargs), label, graph)


class Specialization:
    """The values of Deferreds for one assignment of ranks to unknown-rank placeholders."""

    def __init__(self, graph, ranks: dict):
        self.graph = graph
        self.ranks = ranks  # placeholder Deferred -> rank of its feed
        self.memo: dict = {}  # Deferred -> its value here

    def value(self, obj):
        """`obj` with every Deferred in it (nested lists/tuples/dicts) replaced by its value."""
        if type(obj) is Deferred and obj in self.memo:  # the per-run path
            return self.memo[obj]
        if builder.state.graph is self.graph:
            return self._value(obj)
        with self.graph.as_default():
            return self._value(obj)

    def _value(self, obj):
        if isinstance(obj, Deferred):
            if obj in self.memo:
                return self.memo[obj]
            if obj._graph is not self.graph:
                raise GraphError(f"the {obj._describe()} belongs to another graph than the "
                                 "session's")
            if obj._fn is None:
                result = self._placeholder(obj)
            else:
                args = [self._value(a) for a in obj._args]
                kwargs = {k: self._value(v) for k, v in obj._kwargs.items()}
                result = obj._fn(*args, **kwargs)
            self.memo[obj] = result
            return result
        if isinstance(obj, dict):
            return type(obj)((k, self._value(v)) for k, v in obj.items())
        if isinstance(obj, (list, tuple)):
            items = [self._value(v) for v in obj]
            if type(obj) in (list, tuple):
                return type(obj)(items)
            return type(obj)(*items)  # a namedtuple
        return obj

    def _placeholder(self, leaf: Deferred):
        rank = self.ranks.get(leaf)
        if rank is None:
            raise FeedError(f"the fetches need placeholder {leaf._label!r} (unknown rank, "
                            f"{leaf._dtype}), not given in feed_dict")
        return placeholder((None,) * rank, leaf._dtype, name=leaf._label)


def specialize(graph, feed_dict) -> tuple[Specialization, dict | None]:
    """The Specialization of `graph` for the ranks of `feed_dict`'s unknown-rank placeholders,
    and `feed_dict` with those keys replaced by their placeholders of known rank."""
    ranks = {}
    for key, value in (feed_dict or {}).items():
        if isinstance(key, Deferred) and key._fn is None:
            ranks[key] = int(np.ndim(value))
    signature = tuple(sorted((k._id, r) for k, r in ranks.items()))
    cache = state_of(graph).specializations
    spec = cache.get(signature)
    if spec is None:
        spec = cache[signature] = Specialization(graph, ranks)
    if not feed_dict or not any(isinstance(k, Deferred) for k in feed_dict):
        return spec, feed_dict
    return spec, {spec.value(k) if isinstance(k, Deferred) else k: v
                  for k, v in feed_dict.items()}
