"""`check_numerics`: the graph run node by node, as `optimize=0`, with every value checked for
NaN and inf (`autograd.anomaly.check_node` names the node, its op and the line that built it)."""

from __future__ import annotations

from ..autograd.anomaly import check_node, xp
from ..graph.program import commit_assignments
from .interpreter import Interpreter, needed_nodes


def checked_program(graph, fetch_nodes, feed_nodes, commit: bool = True):
    """A Program running the unoptimized graph node by node (as `optimize=0`) and checking
    each node's output with `check_node`; `commit=False` leaves assignments uncommitted (a
    check run before the real one, as dj.jit does)."""
    class NumericsProgram(Interpreter):
        """The interpreter, checking every computed value for NaN and inf."""

        def __init__(self):
            super().__init__(graph, fetch_nodes, feed_nodes)
            fed = set(self.feed_nodes)
            self.step_nodes = [n for n in needed_nodes(self.fetch_nodes, fed) if n not in fed]

        def __call__(self, feed_arrays: list) -> list:
            values: list = [None] * self.n_slots
            for i, s in zip(self.feed_index, self.feed_slots):
                values[s] = feed_arrays[i]
            pending = []
            for node, (out, kind, payload, inputs, attrs) in zip(self.step_nodes, self.steps):
                if kind == "var":
                    values[out] = payload._data
                elif kind == "const":
                    values[out] = payload
                else:
                    args = [values[i] for i in inputs]
                    values[out] = payload(*args, **attrs)
                    check_node(node, args, values[out])
                    if kind == "assign":
                        pending.append((attrs["ref"], values[out]))
            results = [None if none else xp.array(values[s])
                       for s, none in zip(self.fetch_slots, self.fetch_none)]
            if commit:
                commit_assignments(pending)
            return results

    return NumericsProgram()
