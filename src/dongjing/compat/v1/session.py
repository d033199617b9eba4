"""tf.Session / tf.InteractiveSession over dj.Session, the default-session stack, Operations
(what runs for its effects) and `Tensor.eval`.

A tf.Session owns the values of its graph's tf.Variables and the streams of its random ops
(session_state.py), as TF 1.x does; dj.Session keeps dongjing's shared state.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...errors import GraphError
from ...graph.builder import constant
from ...ops.state import group
from ...runtime import interpreter
from ...runtime.feeds import resolve_key
from ...runtime.fetch_structure import flatten, identified, run_key
from ...runtime.session import Session as _DjSession
from ...tensor import Tensor
from .deferred import Deferred, specialize
from .graph_state import state_of
from .graphs import get_default_graph
from .session_state import FailedPreconditionError, SessionState
from .unsupported import not_provided

if TYPE_CHECKING:
    import numpy as np

    from ...graph.graph import Graph
    from ...types import TensorLike
    from .variables import Variable

# tf.Variable, set by variables.py when it loads (it imports this module)
_late = types.SimpleNamespace(Variable=None)

_sessions: list = []  # the default-session stack (innermost last)
_default_optimize = [2]  # the compiler level of new tf.Sessions (set_session_optimize)


def set_session_optimize(level: int) -> None:
    """The compiler level (0, 1, 2; see dj.Session) of tf.Sessions made from now on."""
    if level not in (0, 1, 2):
        raise ValueError(f"set_session_optimize: level must be 0, 1 or 2, got {level!r}")
    _default_optimize[0] = level


class Operation:
    """A TF1 op run for its effects (a train op, an initializer, an assignment, a group):
    `sess.run(op)` runs it and gives None; `op.run(feed_dict)` uses the default session."""

    __slots__ = ("tensor", "name")

    def __init__(self, tensor: Tensor | None, name: str | None = None) -> None:
        if tensor is not None and (not isinstance(tensor, Tensor) or tensor._node is None):
            raise GraphError(f"internal: an Operation wraps a graph op, got {tensor!r}")
        self.tensor = tensor
        self.name = name or (tensor.name if tensor is not None else "NoOp")

    @property
    def graph(self) -> Graph | None:
        """The graph of this op (None for an empty no-op)."""
        return None if self.tensor is None else self.tensor._node.graph

    def run(self, feed_dict: Mapping[Any, Any] | None = None,
            session: _DjSession | None = None) -> None:
        """Run this op in `session` (default: the default session)."""
        _session(session).run(self, feed_dict)

    def __repr__(self) -> str:
        return f"<tf.Operation {self.name!r}>"


def _session(session):
    if session is not None:
        return session
    if not _sessions:
        raise GraphError("no default session: run it in `with tf.Session() as sess:` (which "
                         "makes sess the default), or pass session=sess, or use "
                         "tf.InteractiveSession()")
    return _sessions[-1]


def get_default_session() -> Session | None:
    """The innermost session entered with `with` (or an open InteractiveSession), or None."""
    return _sessions[-1] if _sessions else None


class Session(_DjSession):
    """A TF1 session on `graph` (default: the default graph). `with tf.Session() as sess:`
    makes it the default session (for `t.eval()`, `op.run()`) and its graph the default graph,
    and closes it at the end. `config` (threads, devices, placement) does not change results
    and is ignored."""

    def __init__(self, target: str = "", graph: Graph | None = None, config: object = None
                 ) -> None:
        if target:
            not_provided("tf.Session(target=...) (distributed TensorFlow)")
        super().__init__(graph if graph is not None else get_default_graph(),
                         optimize=_default_optimize[0])
        self._contexts: list = []
        self._state = SessionState()
        self._reads: dict = {}  # run key -> (graph version, tf.Variables the run reads)

    def __enter__(self) -> Session:
        ctx = self.graph.as_default()
        ctx.__enter__()
        self._contexts.append(ctx)
        _sessions.append(self)
        return self

    def __exit__(self, *exc) -> bool:
        if _sessions and _sessions[-1] is self:
            _sessions.pop()
        if self._contexts:
            self._contexts.pop().__exit__(*exc)
        self.close()
        return False

    def as_default(self):
        """Context manager making this the default session (it stays open afterwards)."""
        return _AsDefault(self)

    def run(self, fetches: Any, feed_dict: Mapping[Any, Any] | None = None, options: Any = None,
            run_metadata: Any = None) -> Any:
        """Values of `fetches` (tensors, Variables, Operations, summaries, in lists/tuples/
        dicts): None for an Operation, the value assigned for an assignment, serialized bytes
        for a summary. Unknown-rank placeholders take the rank of what is fed."""
        if options is not None or run_metadata is not None:
            not_provided("Session.run(options=..., run_metadata=...) (tracing)")
        if self._closed:
            raise GraphError("Attempted to use a closed Session.")
        spec, feeds = specialize(self.graph, feed_dict)
        effects: list = []
        finishing: list = []
        resolved = _resolve(fetches, spec, effects, finishing)
        if effects:
            resolved = (resolved, effects)
        self._check_initialized(resolved, feeds)
        with self._state.installed(state_of(self.graph).variables):
            out = super().run(resolved, feeds)
        out = out[0] if effects else out
        return _finish(fetches, out) if finishing else out

    def _check_initialized(self, fetches, feeds) -> None:
        """Raise FailedPreconditionError if the run reads a tf.Variable this Session has not
        initialized (before running anything)."""
        key = run_key(fetches, feeds)
        entry = self._reads.get(key)
        if entry is not None and entry[0] == self.graph.version and entry[2]:
            return  # all were initialized before, and this Session never uninitializes
        if entry is None or entry[0] != self.graph.version:
            if len(self._reads) >= 256:  # fetch structures that keep changing
                self._reads.clear()
            # the fetched objects are kept so that the ids in `key` stay theirs
            entry = [self.graph.version, self._variables_read(fetches, feeds), False,
                     identified(fetches, list(feeds or ()))]
            self._reads[key] = entry
        for var in entry[1]:
            if not self._state.array(var._flag):
                raise FailedPreconditionError(
                    f"Attempting to use uninitialized value {var.var_name} (run "
                    "tf.global_variables_initializer() or the variable's initializer in this "
                    "Session first: each Session holds its own values)")
        entry[2] = True

    def _variables_read(self, fetches, feeds) -> list:
        Variable = _late.Variable  # tf.Variable: variables.py is built on this module
        leaves: list = []
        flatten(fetches, leaves)
        fetch_nodes = [self._fetch_node(f) for f in leaves]
        fed = {resolve_key(self.graph, k) for k in (feeds or ())}
        guards = state_of(self.graph).guards
        reads: dict = {}

        def note(node):
            if node.op.name == "variable" and isinstance(node.attrs["ref"], Variable):
                reads[id(node.attrs["ref"])] = node.attrs["ref"]

        for node in fetch_nodes:
            note(node)
        for node in interpreter.needed_nodes(fetch_nodes, fed):
            skip = None
            if node.op.kind == "effect" and "ref" in node.attrs:
                skip = node.inputs[0]  # the assignment's target is written, not read
            elif id(node) in guards and guards[id(node)][0] is node:
                skip = guards[id(node)][1]  # read only when initialized
            for i in node.inputs:
                if i is not skip:
                    note(i)
        return list(reads.values())

    def load_variable(self, var: Variable, value: TensorLike) -> None:
        """Set `var`'s value in this Session (Variable.load, Saver.restore)."""
        self._state.set(var, value)
        self._state.set(var._flag, True)

    def variable_value(self, var: Variable) -> np.ndarray | None:
        """`var`'s value in this Session (a copy), or None before it is initialized."""
        if not self._state.array(var._flag):
            return None
        return self._state.array(var).copy()

    def close(self) -> None:
        """Close the session: its variable values are freed."""
        super().close()
        self._state = SessionState()
        self._reads.clear()


class InteractiveSession(Session):
    """A Session that makes itself the default session when created (until `close()`)."""

    def __init__(self, target: str = "", graph: Graph | None = None, config: object = None
                 ) -> None:
        super().__init__(target, graph, config)
        _sessions.append(self)

    def close(self) -> None:
        """Close the session and stop it being the default."""
        if self in _sessions:
            _sessions.remove(self)
        super().close()


class _AsDefault:
    def __init__(self, session: Session):
        self.session = session

    def __enter__(self) -> Session:
        _sessions.append(self.session)
        return self.session

    def __exit__(self, *exc) -> bool:
        _sessions.remove(self.session)
        return False


def _resolve(fetches, spec, effects: list, finishing: list):
    """The fetch nest with Deferreds built for `spec` and Operations as their graph ops (an
    assignment as the value it assigns, its effect appended to `effects`; a summary as the
    tensors it needs, noted in `finishing`)."""
    if isinstance(fetches, Deferred):
        return _resolve(spec.value(fetches), spec, effects, finishing)
    if hasattr(fetches, "_fetch_tensors"):
        finishing.append(fetches)
        return fetches._fetch_tensors()
    if isinstance(fetches, Operation):
        if fetches.tensor is None:
            return _no_op(spec.graph)
        value = getattr(fetches, "value", None)
        if value is not None:
            effects.append(fetches.tensor)
            return value
        return fetches.tensor
    if isinstance(fetches, dict):
        return type(fetches)((k, _resolve(v, spec, effects, finishing))
                             for k, v in fetches.items())
    if isinstance(fetches, (list, tuple)):
        items = [_resolve(v, spec, effects, finishing) for v in fetches]
        return type(fetches)(items) if type(fetches) in (list, tuple) else type(fetches)(*items)
    if fetches is None:
        raise GraphError("cannot fetch None: sess.run fetches tensors, Variables or operations")
    return fetches


def _finish(fetches, out):
    """`out` (values in the shape of the resolved fetches) with each summary's values made into
    what TF gives for it (serialized bytes)."""
    if hasattr(fetches, "_fetch_tensors"):
        return fetches._finish(out)
    if isinstance(fetches, dict):
        return type(fetches)((k, _finish(v, out[k])) for k, v in fetches.items())
    if isinstance(fetches, (list, tuple)) and not isinstance(fetches, Deferred):
        items = [_finish(f, o) for f, o in zip(fetches, out)]
        return type(fetches)(items) if type(fetches) in (list, tuple) else type(fetches)(*items)
    return out


def _no_op(graph):
    """A graph op with no effect (fetching it gives None), for an empty group."""
    with graph.as_default():
        return group(constant(0.0, name="no_op"))


def eval_tensor(self: Tensor, feed_dict: Mapping[Any, Any] | None = None,
                session: _DjSession | None = None) -> np.ndarray:
    """TF1's `Tensor.eval`: the value of this tensor in `session` (default: the default
    session, set by `with tf.Session() as sess:`)."""
    if (not isinstance(self, Deferred) and self._node is None and session is None
            and not _sessions):
        return self.numpy()  # an eager tensor has its value already
    return _session(session).run(self, feed_dict)


class TensorShape(tuple[int | None, ...]):
    """A shape as TF1 prints and lists it: `None` for unknown dims."""

    @property
    def ndims(self) -> int:
        """The rank."""
        return len(self)

    @property
    def dims(self) -> list[int | None]:
        """The dims (None where unknown)."""
        return list(self)

    def as_list(self) -> list[int | None]:
        """The dims as a list (None where unknown)."""
        return list(self)


def get_shape(self: Tensor) -> TensorShape:
    """TF1's `Tensor.get_shape()`: the static shape."""
    return TensorShape(self.shape)
