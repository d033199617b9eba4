"""The compiled Program: the generated function, its source (in linecache), graph and stats."""

from __future__ import annotations

import itertools
import linecache
import re
import threading
import types
import weakref

import numpy as np

from ..backends import is_array
from ..core import profiler_hooks as _profiler  # `_profiler.on`: a profiler is recording
from ..errors import GraphError
from ..graph.program import Program, commit_assignments
from .cuda_graphs import Replayer

# the module name the generated programs run under (what warnings filters match)
GENERATED_MODULE = "dongjing.generated"
_counter = itertools.count()
# the planned buffers' global names (codegen.Generator.buffers; a loop body's have a prefix)
_BUFFER = re.compile(r"_buf(\w*_)?\d+")


def register_source(owner, filename: str, source: str) -> None:
    """Put generated `source` in `linecache` under `filename` (so tracebacks and debuggers show
    it) for as long as `owner` lives: the entry goes when `owner` is collected, so a process
    that compiles and drops many programs (dj.jit over changing shapes) keeps only the live
    ones' text."""
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    weakref.finalize(owner, linecache.cache.pop, filename, None)


class _SourceError(GraphError):
    def __init__(self, name: str):
        super().__init__(f"source node {name!r} needs a value: feed it")


class CompiledProgram(Program):
    """Callable `program(feed_arrays) -> fetched values`; `.graph`, `.source`, `.stats`."""

    fresh_outputs = True  # codegen: a fetch that is not this run's own storage is copied

    def __init__(self, graph, source: str, namespace: dict, stats: list, fetch_nodes,
                 feed_nodes, kernels: dict | None = None, backend=None):
        self.graph = graph
        self.backend = backend  # None: NumPy; else the device backend its arrays live on
        self.source = source
        self.stats = stats
        self.fetch_nodes = list(fetch_nodes)
        self.feed_nodes = list(feed_nodes)
        self.filename = f"<dongjing-program-{next(_counter)}>"
        register_source(self, self.filename, source)
        namespace["_SourceError"] = _SourceError
        namespace["__name__"] = GENERATED_MODULE  # warnings name dongjing, not "<string>"
        code = compile(source, self.filename, "exec")
        exec(code, namespace)  # defines `program` from our own generated source
        namespace.update(kernels or {})  # the compiled kernels, not their Python text
        self._run = namespace["program"]
        self.namespace = namespace
        self.generator = None  # the code generator (set by build_program): timed variants
        # The planned buffers (`_buf<i>` globals) are the building thread's; every other thread
        # runs a twin of the function over its own buffer set, so concurrent runs never share
        # intermediates. The profiler's timed variant uses the first set: runs serialise then.
        self._home = threading.get_ident()
        self._local = threading.local()
        self._lock = threading.Lock()
        # on a CUDA device, steady-state runs replay a captured CUDA graph (cuda_graphs.py)
        self.graphs = None
        if backend is not None and backend.device_type == "cuda":
            self.graphs = Replayer.for_program(self)

    def __call__(self, feed_arrays: list) -> list:
        if _profiler.on:  # profiler hook: run the variant timing each node
            with self._lock:
                return _profiler.run_compiled(self, feed_arrays)
        if threading.get_ident() == self._home:
            if self.graphs is not None:
                return self.graphs(feed_arrays)
            run = self._run
        else:
            run = getattr(self._local, "run", None) or self._thread_run()
        outputs, pending = run(feed_arrays)
        commit_assignments(pending)
        return outputs

    def _thread_run(self):
        """This thread's twin of the generated function: same code and constants, fresh
        buffers (allocated on the thread's first call, freed with the thread)."""
        namespace = dict(self.namespace)
        empty = np.empty if self.backend is None else self.backend.empty
        for name, value in namespace.items():
            if _BUFFER.fullmatch(name) and is_array(value):
                namespace[name] = empty(value.shape, value.dtype)
            elif isinstance(value, types.FunctionType) and value.__globals__ is self.namespace:
                # a generated loop function: its twin reads this thread's buffers too
                namespace[name] = types.FunctionType(value.__code__, namespace, value.__name__)
        run = types.FunctionType(self._run.__code__, namespace, self._run.__name__)
        self._local.run = run
        return run

    def __repr__(self) -> str:
        return f"<CompiledProgram {self.filename}: {len(self.graph.nodes)} nodes>"
