"""The compiled Program: the generated function, its source (in linecache), graph and stats."""

from __future__ import annotations

import itertools
import linecache

from ..errors import GraphError
from ..profiler import hooks as _profiler  # `_profiler.on`: a profiler is recording
from ..runtime.program import Program, commit_assignments

_counter = itertools.count()


class _SourceError(GraphError):
    def __init__(self, name: str):
        super().__init__(f"source node {name!r} needs a value: feed it")


class CompiledProgram(Program):
    """Callable `program(feed_arrays) -> fetched values`; `.graph`, `.source`, `.stats`."""

    def __init__(self, graph, source: str, namespace: dict, stats: list, fetch_nodes,
                 feed_nodes, kernels: dict | None = None):
        self.graph = graph
        self.source = source
        self.stats = stats
        self.fetch_nodes = list(fetch_nodes)
        self.feed_nodes = list(feed_nodes)
        self.filename = f"<dongjing-program-{next(_counter)}>"
        lines = source.splitlines(keepends=True)
        linecache.cache[self.filename] = (len(source), None, lines, self.filename)
        namespace["_SourceError"] = _SourceError
        code = compile(source, self.filename, "exec")
        exec(code, namespace)  # defines `program` from our own generated source
        namespace.update(kernels or {})  # the compiled kernels, not their Python text
        self._run = namespace["program"]
        self.namespace = namespace
        self.generator = None  # the code generator (set by build_program): timed variants

    def __call__(self, feed_arrays: list) -> list:
        if _profiler.on:  # profiler hook: run the variant timing each node
            return _profiler.run_compiled(self, feed_arrays)
        outputs, pending = self._run(feed_arrays)
        commit_assignments(pending)
        return outputs

    def __repr__(self) -> str:
        return f"<CompiledProgram {self.filename}: {len(self.graph.nodes)} nodes>"
