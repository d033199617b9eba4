"""The reference executor: runs the needed nodes of a graph in topological order via op.forward.

`build_interpreter` makes the Program that `Session(optimize=0)` runs (see graph/program.py);
`run_subgraph` runs the sub-graph of a control-flow op.
"""

from __future__ import annotations

from ..backends import backend_of, default_backend, is_array, numpy_backend
from ..compiler.pipeline import build_program as compile_program
from ..core import late
from ..core import profiler_hooks as _profiler  # `_profiler.on`: a profiler is recording
from ..core.low_precision import needs_widening, widened
from ..errors import GraphError
from ..graph.program import Program, commit_assignments, storage

_HOST = numpy_backend.array_types[0]

def needed_nodes(fetch_nodes, fed) -> list:
    """The nodes `fetch_nodes` depend on, not looking past `fed` ones, in graph order."""
    seen: set = set()
    stack = [n for n in fetch_nodes]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node not in fed:
            stack.extend(node.inputs)
    return sorted(seen, key=lambda n: n.id)


class Interpreter(Program):
    """A Program that walks a fixed schedule of nodes; values live in a list of slots."""

    source = None

    def __init__(self, graph, fetch_nodes, feed_nodes, backend=None):
        self.graph = graph
        self.backend = None if backend is None or backend.name == "numpy" else backend
        self.stats: list = []
        self.fetch_nodes = list(fetch_nodes)
        self.feed_nodes = list(feed_nodes)
        fed = set(self.feed_nodes)
        order = needed_nodes(self.fetch_nodes, fed)
        slot = {node: i for i, node in enumerate(order)}
        self.n_slots = len(order)
        self.feed_slots = [slot[n] for n in self.feed_nodes if n in slot]
        self.feed_index = [i for i, n in enumerate(self.feed_nodes) if n in slot]
        self.steps = []  # (slot, kind, payload, input slots, attrs)
        self.sources = []  # arrays the run reads by reference: outputs sharing them are copied
        for node in order:
            if node in fed:
                continue
            op = node.op
            if op.name == "constant":
                value = node.attrs["value"]
                if self.backend is not None:  # moved to the device once, here
                    value = self.backend.move(value)
                self.steps.append((slot[node], "const", value, (), None))
                self.sources.append(value)
            elif op.name == "variable":
                self.steps.append((slot[node], "var", node.attrs["ref"], (), None))
            elif op.kind == "source":
                what = "placeholder" if op.name == "placeholder" else "source node"
                raise GraphError(f"{what} {node.name!r} ({node.type_str}) needs a value: feed it")
            else:
                inputs = tuple(slot[i] for i in node.inputs)
                kind = "assign" if op.kind == "effect" and "ref" in node.attrs else "call"
                forward = op.forward if self.backend is None else op.forward_for(self.backend.xp)
                if needs_widening(op, [i.dtype for i in node.inputs]):  # 16-bit floats
                    forward = widened(forward, node.dtype)
                self.steps.append((slot[node], kind, forward, inputs, node.attrs))
        self.variables = [s[2] for s in self.steps if s[1] == "var"]
        self.source_ids = {id(storage(a)) for a in self.sources}
        self.fetch_slots = [slot[n] for n in self.fetch_nodes]
        self.fetch_none = [n.op.kind == "effect" for n in self.fetch_nodes]

    def __call__(self, feed_arrays: list) -> list:
        values: list = [None] * self.n_slots
        for i, s in zip(self.feed_index, self.feed_slots):
            values[s] = feed_arrays[i]
        pending = []
        steps = self.steps if not _profiler.on else _profiler.interpreted_steps(self)
        for out, kind, payload, inputs, attrs in steps:
            if kind == "call":
                values[out] = payload(*[values[i] for i in inputs], **attrs)
            elif kind == "var":
                values[out] = payload._data
            elif kind == "const":
                values[out] = payload
            else:
                value = payload(*[values[i] for i in inputs], **attrs)
                values[out] = value
                pending.append((attrs["ref"], value))
        results = []
        shared = self.source_ids | {id(storage(v._data)) for v in self.variables}
        for s, none in zip(self.fetch_slots, self.fetch_none):
            value = None if none else values[s]
            if is_array(value) and id(storage(value)) in shared:
                value = value.copy()
            elif value is not None and not isinstance(value, tuple) and not is_array(value):
                value = (self.backend or default_backend()).asarray(value)
            results.append(value)
        commit_assignments(pending)
        return results


def build_interpreter(graph, fetch_nodes, feed_nodes, backend=None) -> Interpreter:
    """A Program running the nodes `fetch_nodes` need, in topological order, via op.forward
    (on `backend`'s arrays; None: NumPy)."""
    return Interpreter(graph, fetch_nodes, feed_nodes, backend)


def subgraph_program(sub, arrays=()):
    """The (cached) program running a control-flow sub-graph: args in, outputs out, on the
    backend of `arrays` (its argument values). Compiled (optimized, code-generated) when the
    enclosing graph was compiled, else interpreted."""
    backend = None
    for a in arrays:
        if is_array(a) and type(a) is not _HOST:
            backend = backend_of(a)
            break
    name = None if backend is None else backend.name
    programs = getattr(sub, "_program", None)
    if programs is None or programs[0] != sub.version:
        programs = (sub.version, {})
        sub._program = programs
    built = programs[1].get(name)
    if built is None:
        level = getattr(sub, "compile_level", 0)
        if level:
            built = compile_program(sub, sub.outputs, sub.args, level, backend)
        else:
            built = Interpreter(sub, sub.outputs, sub.args, backend)
        programs[1][name] = built
    return built


def run_subgraph(sub, arrays: list) -> list:
    """Run a control-flow sub-graph on its argument values; returns its output values."""
    return subgraph_program(sub, arrays)(arrays)


late.provide(subgraph_program=subgraph_program)  # control-flow ops, below, run sub-graphs with it
