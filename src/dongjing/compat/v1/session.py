"""tf.Session / tf.InteractiveSession over dj.Session, the default-session stack, Operations
(what runs for its effects) and `Tensor.eval`."""

from __future__ import annotations

from ...errors import GraphError
from ...runtime.session import Session as _DjSession
from ...tensor import Tensor
from .deferred import Deferred, specialize
from .graphs import get_default_graph
from .unsupported import not_provided

_sessions: list = []  # the default-session stack (innermost last)


class Operation:
    """A TF1 op run for its effects (a train op, an initializer, an assignment, a group):
    `sess.run(op)` runs it and gives None; `op.run(feed_dict)` uses the default session."""

    __slots__ = ("tensor", "name")

    def __init__(self, tensor, name: str | None = None):
        if tensor is not None and (not isinstance(tensor, Tensor) or tensor._node is None):
            raise GraphError(f"internal: an Operation wraps a graph op, got {tensor!r}")
        self.tensor = tensor
        self.name = name or (tensor.name if tensor is not None else "NoOp")

    @property
    def graph(self):
        """The graph of this op (None for an empty no-op)."""
        return None if self.tensor is None else self.tensor._node.graph

    def run(self, feed_dict: dict | None = None, session=None) -> None:
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


def get_default_session():
    """The innermost session entered with `with` (or an open InteractiveSession), or None."""
    return _sessions[-1] if _sessions else None


class Session(_DjSession):
    """A TF1 session on `graph` (default: the default graph). `with tf.Session() as sess:`
    makes it the default session (for `t.eval()`, `op.run()`) and its graph the default graph,
    and closes it at the end. `config` (threads, devices, placement) does not change results
    and is ignored."""

    def __init__(self, target: str = "", graph=None, config=None):
        if target:
            not_provided("tf.Session(target=...) (distributed TensorFlow)")
        super().__init__(graph if graph is not None else get_default_graph())
        self._contexts: list = []

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

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Values of `fetches` (tensors, Variables, Operations, in lists/tuples/dicts); None for
        Operations. Unknown-rank placeholders take the rank of what is fed."""
        if options is not None or run_metadata is not None:
            not_provided("Session.run(options=..., run_metadata=...) (tracing)")
        spec, feeds = specialize(self.graph, feed_dict)
        return super().run(_resolve(fetches, spec), feeds)


class InteractiveSession(Session):
    """A Session that makes itself the default session when created (until `close()`)."""

    def __init__(self, target: str = "", graph=None, config=None):
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


def _resolve(fetches, spec):
    """The fetch nest with Deferreds built for `spec` and Operations as their graph ops."""
    if isinstance(fetches, Deferred):
        return _resolve(spec.value(fetches), spec)
    if isinstance(fetches, Operation):
        if fetches.tensor is None:
            return _no_op(spec.graph)
        return fetches.tensor
    if isinstance(fetches, dict):
        return type(fetches)((k, _resolve(v, spec)) for k, v in fetches.items())
    if isinstance(fetches, (list, tuple)):
        items = [_resolve(v, spec) for v in fetches]
        return type(fetches)(items) if type(fetches) in (list, tuple) else type(fetches)(*items)
    if fetches is None:
        raise GraphError("cannot fetch None: sess.run fetches tensors, Variables or operations")
    return fetches


def _no_op(graph):
    """A graph op with no effect (fetching it gives None), for an empty group."""
    from ...ops.state import group

    with graph.as_default():
        from ...graph.builder import constant

        return group(constant(0.0, name="no_op"))


def eval_tensor(self, feed_dict: dict | None = None, session=None):
    """TF1's `Tensor.eval`: the value of this tensor in `session` (default: the default
    session, set by `with tf.Session() as sess:`)."""
    if (not isinstance(self, Deferred) and self._node is None and session is None
            and not _sessions):
        return self.numpy()  # an eager tensor has its value already
    return _session(session).run(self, feed_dict)


class TensorShape(tuple):
    """A shape as TF1 prints and lists it: `None` for unknown dims."""

    @property
    def ndims(self) -> int:
        """The rank."""
        return len(self)

    @property
    def dims(self) -> list:
        """The dims (None where unknown)."""
        return list(self)

    def as_list(self) -> list:
        """The dims as a list (None where unknown)."""
        return list(self)


def get_shape(self) -> TensorShape:
    """TF1's `Tensor.get_shape()`: the static shape."""
    return TensorShape(self.shape)
