"""Tracing one call of a Python function into a static graph, and running the traced graph: the
compiled unit that dj.jit caches per signature."""

from __future__ import annotations

import inspect
import re
import time
import warnings

from ..dtypes import ARRAY_SCALARS, is_dtype, is_floating
from ..errors import DeviceError, DongjingError, GraphError, JitError, SideEffectError
from ..graph.builder import placeholder, to_node
from ..graph.graph import Graph
from ..nn.updates import take_update_ops
from ..tensor import Tensor
from . import placement
from .fetch_structure import flatten
from .interpreter import needed_nodes
from .jit_autograd import differentiable_call
from .session import Session
from .side_effects import SideEffectRecorder
from .signature import map_tensors
from .trace_grads import TraceGrads, _trainable, guards_hold


class Trace:
    """One traced call: its graph, a Session over it, and how values go in and come out.

    Fetched per run: the outputs, the gradients the trace left on parameters (written to their
    eager `.grad`), and every assignment (committed by the Session at the end of the run).
    """

    def __init__(self, fn, args: tuple, kwargs: dict, name: str, optimize: int,
                 strict: bool = False):
        start = time.perf_counter()
        self.graph = Graph(name=f"jit_{name}")
        names = _parameter_names(fn)
        self.placeholders: list = []
        self._arrays: list = []  # the argument arrays (for the placement)
        with self.graph.as_default():
            sym_args, sym_kwargs = map_tensors(args, kwargs, self._placeholder_maker(names))
            with TraceGrads(self.graph) as grads, SideEffectRecorder() as effects:
                try:
                    out = fn(*sym_args, **sym_kwargs)
                except DongjingError as exc:
                    _annotate(exc, name)
                    raise
            self.side_effects = effects.log
            if strict and effects.log:
                raise SideEffectError(
                    f"dj.jit({name}, strict=True): {effects.log[0]} (this runs once, while "
                    f"tracing; the compiled function will not repeat it)")
            out_leaves: list = []
            self._rebuild = _flatten(out, out_leaves, name)
            out_nodes = [to_node(self.graph, t) for t in out_leaves]
        self.name = name
        self.guards = grads.guards
        self.grad_inputs = [(p, g._node) for p, g in grads.inputs]
        finals = grads.results()
        self.grads_none = [p for p, g in finals if g is None]
        self.grads_eager = [(p, g) for p, g in finals if g is not None and g._node is None]
        symbolic = [(p, g._node) for p, g in finals if g is not None and g._node is not None]
        self.grads_fetched = [p for p, _ in symbolic]
        effects = [n for n in self.graph.nodes if n.op.name == "assign"]
        _take_update_ops(self.graph)
        _warn_reads_after_assign(self.graph, name)
        self.n_out = len(out_nodes)
        self.fetches = out_nodes + [n for _, n in symbolic] + effects
        what = f"dj.jit({name})"
        # the device it runs on: where its captured parameters live, else its inputs
        self.where = placement.decide(placement.of_state(self.graph.nodes, what),
                                      placement.of_arrays(self._arrays, what), what)
        self._arrays = None
        self.session = Session(self.graph, optimize=optimize, device=self.where)
        # compiled now (so compile time is measured) and called directly: the signature already
        # guarantees each fed array's shape and dtype, so Session.run's feed checks are skipped
        self.program = self.session.program(self.fetches)
        self._feed_plan = self._plan_feeds()
        self.grad_candidates = self._grad_candidates()
        # a function that runs backward() itself returns results without history
        self.differentiable = not grads.written and bool(self.grad_candidates)
        self.grad_plans: dict = {}  # inputs needing grad -> jit_autograd.GradPlan
        self.compile_time = time.perf_counter() - start

    def _plan_feeds(self) -> list:
        """For each placeholder the program takes: an argument index, or a parameter (fed its
        eager .grad)."""
        args = {node: i for i, node in enumerate(self.placeholders)}
        grads = {node: p for p, node in self.grad_inputs}
        needed = needed_nodes(self.fetches, set())
        return [args[n] if n in args else grads[n] for n in needed if n.op.name == "placeholder"]

    def _placeholder_maker(self, names: list):
        def make(path: str, value):
            data = value._data if isinstance(value, Tensor) else value
            self._arrays.append(data)
            self.graph.note_array(data)
            t = placeholder(data.shape, data.dtype, name=_placeholder_name(path, names))
            self.placeholders.append(t._node)
            return t

        return make

    def _grad_candidates(self) -> list:
        """What a gradient may flow to: ("arg", placeholder, index of the tensor argument) for
        floating tensor arguments, ("captured", node, tensor) for captured tensors that require
        grad (Parameters, trainable Variables, leaves)."""
        found = [("arg", n, i) for i, n in enumerate(self.placeholders) if is_floating(n.dtype)]
        for t, node in self.graph._captured.values():
            if node.dtype is not None and is_floating(node.dtype) and _trainable(t):
                found.append(("captured", node, t))
        return found

    def matches(self) -> bool:
        """Whether the eager `.grad` states this trace assumed still hold."""
        return guards_hold(self.guards)

    def run(self, arrays: list, tensors: list | None = None):
        """Run the traced graph on the arrays of the tensor arguments; eager results, which
        carry a JitBackward0 tape node when gradients are wanted (`tensors`: the call's tensor
        arguments, aligned with `arrays`)."""
        if tensors is not None:
            out = differentiable_call(self, tensors, arrays)
            if out is not None:
                return out
        values = self.write_grads(self.program(self.feed_arrays(arrays)))
        return self.rebuild([Tensor._make(v) for v in values[:self.n_out]])

    def feed_arrays(self, arrays: list) -> list:
        """The program's feeds: argument arrays and the eager .grad values the trace reads."""
        return [arrays[src] if type(src) is int else src._grad._data for src in self._feed_plan]

    def rebuild(self, outs: list):
        """The function's output structure around the eager output tensors."""
        return self._rebuild(outs)

    def write_grads(self, values: list) -> list:
        """Set the eager `.grad` of parameters as the traced function left them; `values`."""
        for p in self.grads_none:
            p._grad = None
        for p, g in self.grads_eager:
            p._grad = g
        n = self.n_out
        for p, value in zip(self.grads_fetched, values[n:n + len(self.grads_fetched)]):
            p._grad = Tensor._make(value)
        return values

    def check_placement(self, arrays: list, what: str) -> None:
        """Raise DeviceError when the traced state or `arrays` moved off the trace's device
        (a program failed: parameters moved to a GPU after tracing, say)."""
        where = placement.decide(placement.of_state(self.graph.nodes, what),
                                 placement.of_arrays(arrays, what), what)
        if where != self.where:
            raise DeviceError(f"{what}: traced to run on {self.where}, but its parameters and "
                              f"inputs now live on {where}; call it with inputs on the "
                              "device the model lives on")

    def source(self) -> str | None:
        """The generated Python source of the traced graph."""
        return self.session.source(self.fetches)


def _annotate(exc: DongjingError, name: str) -> None:
    """Add to an error raised while tracing that dj.jit was tracing (and, for a value asked of
    a symbolic tensor, what to do instead)."""
    note = f" [raised while dj.jit traced {name}()"
    if isinstance(exc, GraphError) and "dj.cond" not in str(exc) and getattr(
            exc, "value_hint", True):  # autograph's ConversionError says what to do itself
        note += ": values are unknown while tracing; return a tensor to get it"
    note += "]"
    if exc.args and isinstance(exc.args[0], str) and note not in exc.args[0]:
        exc.args = (exc.args[0] + note,) + exc.args[1:]


def _placeholder_name(path: str, names: list) -> str:
    """"arg 0[1]" -> "x_1", "kwarg 'scale'['c']" -> "scale_c" (the function's own names)."""
    kind, _, rest = path.partition(" ")
    head, *items = rest.replace("]", "").split("[")
    base = head.strip("'")
    if kind == "arg":
        base = names[int(base)] if int(base) < len(names) else f"arg{base}"
    parts = [base] + [re.sub(r"\W", "", item.strip("'\"")) for item in items]
    return "_".join(p for p in parts if p) or "arg"


def _parameter_names(fn) -> list:
    if getattr(fn, "__name__", None) == "__call__":  # a module: name placeholders after forward
        fn = getattr(getattr(fn, "__self__", None), "forward", fn)
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in params
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _flatten(value, leaves: list, name: str):
    """Collect the Tensor leaves of an output nest; return a function rebuilding the nest
    (None, numbers and strings are returned as traced). Anything else is refused (see
    `check_output`): a set or an object holding traced tensors would hand them, symbolic, to
    eager code."""
    check_output(value, name)
    return flatten(value, leaves, lambda v: isinstance(v, Tensor))


_CONSTANTS = (type(None), bool, int, float, complex, str, bytes, ARRAY_SCALARS)


def check_output(value, name: str, path: str = "the result") -> None:
    """Raise JitError unless `value` is what a jitted function may return: tensors, in tuples,
    lists, dicts and namedtuples (nested as deep as wanted), with None, Python numbers, strings,
    array scalars and dtypes between them, as PyTorch's and JAX's output trees hold."""
    if isinstance(value, (Tensor, *_CONSTANTS)) or is_dtype(value):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            check_output(item, name, f"{path}[{key!r}]")
        return
    if isinstance(value, (list, tuple)) and _rebuildable(value):
        for i, item in enumerate(value):
            check_output(item, name, f"{path}[{i}]")
        return
    kind = type(value).__qualname__
    hint = ("sets have no order: return a tuple or list" if isinstance(value, (set, frozenset))
            else "wrap it with dj.tensor(...)" if hasattr(value, "__array__")
            else "return tensors in a tuple, list, dict or namedtuple")
    raise JitError(f"dj.jit({name}): {path} is a {kind}, which a jitted function cannot return "
                   f"(its tensors would leave the trace symbolic); {hint}")


def _rebuildable(value) -> bool:
    """A list or tuple that `flatten` can rebuild: exactly list or tuple, or a namedtuple."""
    kind = type(value)
    return kind in (list, tuple) or (issubclass(kind, tuple) and hasattr(kind, "_fields"))


def _take_update_ops(graph) -> None:
    take_update_ops(graph)  # fetched below with every other assignment


def _warn_reads_after_assign(graph, name: str) -> None:
    """Warn when the function reads a Variable after assigning it: in the graph every read sees
    the value from before the call (assignments commit at its end)."""
    assigned: set = set()
    late: list = []
    for node in graph.nodes:
        if node.op.name == "assign":
            assigned.add(node.inputs[0])
            continue
        for inp in node.inputs:
            if inp in assigned and node.op.kind != "effect" and inp.name not in late:
                late.append(inp.name)
    if late:
        warnings.warn(
            f"dj.jit({name}): {', '.join(late[:5])} {'is' if len(late) == 1 else 'are'} read after "
            "an update in the same call (e.g. a forward pass after opt.step()); in the traced "
            "graph every read sees the value from before the call",
            UserWarning,
            stacklevel=5,
        )
