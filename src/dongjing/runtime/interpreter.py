"""The reference executor: runs the needed nodes of a graph in topological order via op.forward.

`build_interpreter` makes the Program that `Session(optimize=0)` runs (see runtime/program.py);
`run_subgraph` runs the sub-graph of a control-flow op.
"""

from __future__ import annotations

from ..backends import default_backend, is_array
from ..errors import GraphError
from ..profiler import hooks as _profiler  # `_profiler.on`: a profiler is recording
from .program import Program, commit_assignments, storage


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

    def __init__(self, graph, fetch_nodes, feed_nodes):
        self.graph = graph
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
                self.steps.append((slot[node], "const", node.attrs["value"], (), None))
                self.sources.append(node.attrs["value"])
            elif op.name == "variable":
                self.steps.append((slot[node], "var", node.attrs["ref"], (), None))
            elif op.kind == "source":
                what = "placeholder" if op.name == "placeholder" else "source node"
                raise GraphError(f"{what} {node.name!r} ({node.type_str}) needs a value: feed it")
            else:
                inputs = tuple(slot[i] for i in node.inputs)
                kind = "assign" if op.kind == "effect" and "ref" in node.attrs else "call"
                self.steps.append((slot[node], kind, op.forward, inputs, node.attrs))
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
                value = default_backend().asarray(value)
            results.append(value)
        commit_assignments(pending)
        return results


def build_interpreter(graph, fetch_nodes, feed_nodes) -> Interpreter:
    """A Program running the nodes `fetch_nodes` need, in topological order, via op.forward."""
    return Interpreter(graph, fetch_nodes, feed_nodes)


def subgraph_program(sub):
    """The (cached) program running a control-flow sub-graph: args in, outputs out. Compiled
    (optimized, code-generated) when the enclosing graph was compiled, else interpreted."""
    program = getattr(sub, "_program", None)
    if program is None or program[0] != sub.version:
        level = getattr(sub, "compile_level", 0)
        if level:
            from ..compiler.pipeline import build_program as compile_program

            built = compile_program(sub, sub.outputs, sub.args, level)
        else:
            built = Interpreter(sub, sub.outputs, sub.args)
        program = (sub.version, built)
        sub._program = program
    return program[1]


def run_subgraph(sub, arrays: list) -> list:
    """Run a control-flow sub-graph on its argument values; returns its output values."""
    return subgraph_program(sub)(arrays)
