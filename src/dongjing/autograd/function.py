"""Tape nodes: one backward node per recorded op (named like PyTorch's), and AccumulateGrad."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from .provenance import recording_site

if TYPE_CHECKING:
    from ..core.registry import Op


class BackwardNode:
    """What the tape keeps of one op application: its inputs, saved output and edges.

    Subclassed once per op so that `type(t.grad_fn).__name__` reads `MulBackward0` etc.
    """

    __slots__ = (
        "op",
        "attrs",
        "inputs",
        "versions",
        "out_data",
        "out_version",
        "out_saved_version",
        "next_functions",
        "needs",
        "pre_hooks",
        "freed",  # False, or where the backward that freed the saved tensors was called
        "where",  # (code, line) of the user's line that ran the op (provenance.caller)
        "__weakref__",
    )

    def name(self) -> str:
        return type(self).__name__

    def register_hook(self, hook: Callable[..., object]) -> _HookHandle:
        """`hook(grad_out)` may return a replacement gradient (a tensor hook on the output)."""
        if self.pre_hooks is None:
            self.pre_hooks = []
        self.pre_hooks.append(hook)
        return _HookHandle(self.pre_hooks, hook)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {id(self):#x}>"


class AccumulateGrad:
    """Sink of the tape for a leaf tensor that requires grad: adds into `.grad`."""

    __slots__ = ("_variable", "pre_hooks", "__weakref__")

    next_functions = ()

    def __init__(self, variable):
        self._variable = weakref.ref(variable)
        self.pre_hooks = None

    @property
    def variable(self):
        return self._variable()

    def name(self) -> str:
        return "AccumulateGrad"

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


class _HookHandle:
    """Returned by `register_hook`; `.remove()` unregisters."""

    __slots__ = ("_hooks", "_hook")

    def __init__(self, hooks: list, hook):
        self._hooks = hooks
        self._hook = hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


_NO_EDGE = (None, 0)


def _backward_class(op: Op) -> type:
    cls = op.backward_class
    if cls is None:
        cls = type(op.grad_name, (BackwardNode,), {"__slots__": ()})
        object.__setattr__(op, "backward_class", cls)  # derived, per process
    return cls


def accumulator_of(tensor) -> AccumulateGrad:
    """The (cached) AccumulateGrad node of a leaf tensor."""
    acc = getattr(tensor, "_accumulator", None)
    if acc is None:
        acc = tensor._accumulator = AccumulateGrad(tensor)
        if getattr(tensor, "_hooks", None) is None:  # set once, so that each accumulation
            tensor._hooks = None  # reads it without an AttributeError behind getattr
    return acc


def record1(op: Op, x, attrs: dict, result) -> None:
    """`record` for one input, written out (the eager hot path of unary ops)."""
    cls = op.backward_class or _backward_class(op)
    node = cls.__new__(cls)
    node.op = op
    node.attrs = attrs
    node.inputs = (x,)
    node.versions = (x._version[0],)
    fn = x.grad_fn  # record1 runs only when x requires grad
    node.next_functions = ((fn if fn is not None else accumulator_of(x), 0),)
    node.needs = _NEEDS_1
    if op.saves_output:
        node.out_data = result._data
        node.out_version = result._version
        node.out_saved_version = result._version[0]
    else:
        node.out_data = None
    node.pre_hooks = None
    node.freed = False
    node.where = recording_site()
    result.grad_fn = node


def record2(op: Op, a, b, attrs: dict, result) -> None:
    """`record` for two inputs, written out (the eager hot path of binary ops)."""
    cls = op.backward_class or _backward_class(op)
    node = cls.__new__(cls)
    node.op = op
    node.attrs = attrs
    node.inputs = (a, b)
    node.versions = (a._version[0], b._version[0])
    if a.requires_grad:
        fn = a.grad_fn
        edge_a = (fn if fn is not None else accumulator_of(a), 0)
    else:
        edge_a = _NO_EDGE
    if b.requires_grad:
        fn = b.grad_fn
        edge_b = (fn if fn is not None else accumulator_of(b), 0)
    else:
        edge_b = _NO_EDGE
    node.next_functions = (edge_a, edge_b)
    node.needs = (edge_a is not _NO_EDGE, edge_b is not _NO_EDGE)
    if op.saves_output:
        node.out_data = result._data
        node.out_version = result._version
        node.out_saved_version = result._version[0]
    else:
        node.out_data = None
    node.pre_hooks = None
    node.freed = False
    node.where = recording_site()
    result.grad_fn = node


_NEEDS_1 = (True,)


def record(op: Op, inputs: tuple, attrs: dict, result) -> None:
    """Attach a backward node for `op` to `result` (eager mode, gradients wanted)."""
    cls = op.backward_class or _backward_class(op)
    node = cls.__new__(cls)
    node.op = op
    node.attrs = attrs
    node.inputs = inputs
    versions = []
    edges = []
    needs = []
    for t in inputs:
        versions.append(t._version[0])
        if t.requires_grad:
            fn = t.grad_fn
            edges.append((fn if fn is not None else accumulator_of(t), 0))
            needs.append(True)
        else:
            edges.append(_NO_EDGE)
            needs.append(False)
    node.versions = tuple(versions)
    node.next_functions = tuple(edges)
    node.needs = tuple(needs)
    if op.saves_output:
        node.out_data = result._data
        node.out_version = result._version
        node.out_saved_version = result._version[0]
    else:
        node.out_data = None
    node.pre_hooks = None
    node.freed = False
    node.where = recording_site()  # the line that saved the inputs: named by the in-place error
    result.grad_fn = node
