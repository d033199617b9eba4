"""The pass manager: runs the passes of an optimization level to a fixed point, then generates
code. Level 1 = cleanup (dead code, constants, algebra, common subexpressions); level 2 = cleanup
+ a recurrence's per-step GEMMs batched + elementwise fusion + memory planning."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, TypeVar, overload

from ..cpu_kernels import kernels
from ..cpu_kernels.options import get_options
from ..errors import GraphError
from ..graph.builder import placeholder_op
from ..ops.subgraph import compile_subgraphs
from . import loops
from .codegen import Generator
from .compiled_program import CompiledProgram
from .ir import PassResult, Rebuilder
from .memory import plan_memory
from .passes import (
    eliminate_common_subexpressions,
    eliminate_dead_code,
    fold_constants,
    simplify_algebra,
)
from .passes import fuse_elementwise as fusion
from .passes.batch_time_matmuls import batch_time_matmuls
from .passes.expand_compounds import expand_compounds

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..backends.base import Backend
    from ..graph.graph import Graph, Node

CLEANUP = (fold_constants, simplify_algebra, eliminate_common_subexpressions, eliminate_dead_code)
MAX_ROUNDS = 10
_Pass = TypeVar("_Pass", bound="Callable[[Graph, list[Node]], PassResult]")
_EXTRA_PASSES: list = []  # (level, pass) registered with `register_pass`


@overload
def register_pass(fn: _Pass, *, level: int = 1) -> _Pass: ...
@overload
def register_pass(fn: None = None, *, level: int = 1) -> Callable[[_Pass], _Pass]: ...


def register_pass(fn: _Pass | None = None, *, level: int = 1
                  ) -> _Pass | Callable[[_Pass], _Pass]:
    """Run `fn(graph, fetches) -> PassResult` in every optimization at `level` or above.

    The pass joins the cleanup passes and runs with them until nothing changes (it should be a
    function of its graph: once it changed nothing on a graph, it is not run on that same graph
    again); its output is checked with `Graph.verify` every time. It must not change the graph
    it is given (build a new one with `Rebuilder`), and should describe each change in
    `PassResult.changes` (an empty list means "nothing changed"). Programs compiled before
    the call are not affected. Usable as a decorator, with or without arguments;
    `unregister_pass` removes it.
    """
    if fn is None:
        return lambda f: register_pass(f, level=level)
    if level not in (1, 2):
        raise ValueError(f"register_pass: level must be 1 or 2, got {level!r}")
    if not callable(fn):
        raise TypeError(f"register_pass needs a function (graph, fetches) -> PassResult, "
                        f"got {fn!r}")
    unregister_pass(fn)
    _EXTRA_PASSES.append((level, fn))
    return fn


def unregister_pass(fn: Callable[[Graph, list[Node]], PassResult]) -> None:
    """Stop running a pass added with `register_pass` (no error if it was not registered)."""
    _EXTRA_PASSES[:] = [(lv, f) for lv, f in _EXTRA_PASSES if f is not fn]


def _cleanup_passes(level: int) -> tuple:
    return CLEANUP + tuple(f for lv, f in list(_EXTRA_PASSES) if lv <= level)


def substitute_feeds(graph, fetches: list, feeds: list) -> PassResult:
    """Fed nodes become placeholders: a fed value is never computed (nor what only it needs)."""
    fed = set(feeds)
    rb = Rebuilder(graph, copy_on_write=False)  # the pipeline's own copy: the user's stays
    changes = []
    for node in graph.nodes:
        if node in fed and node.op.name != "placeholder":
            attrs = {"shape": node.shape, "dtype": node.dtype}
            rb.map[node] = rb.copy(node, (), op=placeholder_op, attrs=attrs)
            changes.append(f"%{node.name} is fed: a placeholder now")
        else:
            rb.map[node] = rb.copy(node)
    return PassResult(*rb.finish(fetches), changes)


VERIFY = os.environ.get("DONGJING_VERIFY_PASSES", "") not in ("", "0")
"""Check the IR's invariants (`Graph.verify`) after every pass: on in the test suite and when
the environment variable DONGJING_VERIFY_PASSES is set (debug mode)."""


def _record(stats: list, fn, before, result: PassResult) -> PassResult:
    if not isinstance(result, PassResult):
        raise GraphError(f"the pass {fn.__name__} returned {type(result).__name__}, not a "
                         "PassResult(graph, fetches, changes)")
    registered = any(f is fn for _, f in _EXTRA_PASSES)
    if (VERIFY or registered) and result.graph is not before:
        try:
            result.graph.verify()
        except GraphError as exc:
            whose = "the registered pass" if registered else "internal: the pass"
            raise GraphError(f"{whose} {fn.__name__} broke the graph: {exc}") from exc
    stats.append({"pass": fn.__name__, "nodes_before": len(before.nodes),
                  "nodes_after": len(result.graph.nodes), "changes": result.changes})
    return result


# What the pass manager may assume of the built-in cleanup passes, so as not to rerun one where
# it cannot change anything (the reasoning is in docs/compiler.md, "Compile time"):
# idempotent: a second run on its own output changes nothing;
IDEMPOTENT = frozenset({fold_constants, eliminate_common_subexpressions, eliminate_dead_code})
# local: whether it changes a node depends only on the node and what it reads, so removing
# nodes nothing reads (all that dead-code elimination does) gives it nothing new to change.
LOCAL = frozenset({fold_constants, simplify_algebra, eliminate_common_subexpressions})


def _run_pass(stats: list, idle: dict, fn, result: PassResult) -> tuple[PassResult, bool]:
    """`fn` on the current graph, unless it would change nothing there: it already ran on this
    very graph (the same object) and changed nothing, or see IDEMPOTENT and LOCAL. Returns the
    result and whether the pass changed anything; `idle` maps a pass to the graph on which it
    is known to change nothing."""
    before = result.graph
    if idle.get(fn) is before:
        return result, False
    result = _record(stats, fn, before, fn(before, result.fetches))
    after = result.graph
    if not result.changes:
        idle[fn] = before
        return result, False
    idle.pop(fn, None)
    if fn in IDEMPOTENT:
        idle[fn] = after
    if fn is eliminate_dead_code:
        for other in LOCAL:
            if idle.get(other) is before:
                idle[other] = after
    return result, True


def kernel_target(backend) -> str | None:
    """Where fused kernels of a program on `backend` run: "cpu" (numba, for NumPy; None is
    NumPy), "cuda" (a backend whose namespace compiles CUDA elementwise kernels: CuPy), or
    None (no kernel library for this backend: elementwise ops stay calls of its namespace)."""
    if backend is None or backend.device_type == "cpu" and backend.name == "numpy":
        return "cpu"
    return "cuda" if hasattr(backend.xp, "ElementwiseKernel") else None


def optimize(graph, fetches: list, feeds: list = (), level: int = 2, target: str | None = "cpu"):
    """Run the passes of `level` on `graph` for `fetches`; returns (graph, fetches, stats).

    `target`: where fused kernels run (see `kernel_target`). The user's graph is never
    changed: every pass builds a new one.
    """
    stats: list = []
    fetches = list(fetches)
    result = _record(stats, substitute_feeds, graph, substitute_feeds(graph, fetches, feeds))
    result = _record(stats, eliminate_dead_code, result.graph,
                     eliminate_dead_code(result.graph, result.fetches))
    idle: dict = {}  # pass -> the graph it last ran on and left as it was
    if level >= 1:
        passes = _cleanup_passes(level)
        for _ in range(MAX_ROUNDS):
            changed = False
            for fn in passes:
                result, did = _run_pass(stats, idle, fn, result)
                changed = changed or did
            if not changed:
                break
    if level >= 2:
        result, batched = _run_pass(stats, idle, batch_time_matmuls, result)
        if batched:  # the per-step products it replaced are dead now
            for fn in passes:
                result, _ = _run_pass(stats, idle, fn, result)
        if target == "cpu" and kernels.available():
            size_min = get_options().fusion_min_size
            result = _record(stats, expand_compounds, result.graph,
                             expand_compounds(result.graph, result.fetches, size_min))
            for fn in passes:  # the parts of a compound may fold, simplify or merge
                result, _ = _run_pass(stats, idle, fn, result)
        if target is not None:
            result = _record(stats, fusion.fuse_elementwise, result.graph,
                             fusion.fuse_elementwise(result.graph, result.fetches,
                                                     target=target))
    return result.graph, result.fetches, stats


def prepare(graph, fetch_nodes, feed_nodes, level: int, backend=None):
    """Optimize `graph` for its fetches at `level` for a program on `backend` (None: NumPy) and
    compile its control-flow sub-graphs; returns (optimized graph, schedule, fetches, feeds,
    stats)."""
    opt, fetches, stats = optimize(graph, fetch_nodes, feed_nodes, level,
                                   kernel_target(backend))
    if level >= 1:  # cond / while bodies run compiled too

        compile_subgraphs(opt, level)
    feeds = [opt._by_name.get(n.name) for n in feed_nodes]
    return opt, list(opt.nodes), fetches, feeds, stats


def plan(order: list, fetches: list, level: int, stats: list, read_once=(), unbuffered=()):
    """The memory plan of a schedule at `level` (None below 2). `read_once`: fetches that a
    generated loop reads right after each run of the statements (summed into an accumulator),
    so they may live in planned buffers; `unbuffered`: see `plan_memory`."""
    if level < 2:
        return None
    keep = [n.inputs[1] for n in order if n.op.kind == "effect" and "ref" in n.attrs]
    keep += [n for n in order if n.op.kind == "effect"]
    read_once = set(read_once)
    returned = [f for f in fetches if f not in read_once]
    read_once -= set(returned)
    memory = plan_memory(order, returned, keep + list(read_once), unbuffered)
    stats.append({"pass": "plan_memory", "nodes_before": len(order), "nodes_after": len(order),
                  "changes": [f"{len(memory.buffer_of)} values in {len(memory.buffers)} "
                              f"preallocated buffers ({memory.bytes_planned} bytes; "
                              f"{memory.bytes_reused} bytes of writes reuse a buffer)"]})
    return memory


loops.pipeline.prepare, loops.pipeline.plan = prepare, plan  # loop bodies compile through them


def build_program(graph: Graph, fetch_nodes: Sequence[Node], feed_nodes: Sequence[Node],
                  level: int = 2, backend: Backend | None = None) -> CompiledProgram:
    """Compile the fetches of `graph` into a Program (see graph/program.py) at `level`, to
    run on `backend`'s arrays (None: NumPy; a device backend such as CuPy: see
    docs/backends.md)."""
    start = time.perf_counter()
    if backend is not None and backend.name == "numpy":
        backend = None
    opt, order, fetches, feeds, stats = prepare(graph, fetch_nodes, feed_nodes, level, backend)
    gen = Generator(opt, order, fetches, feeds, plan(order, fetches, level, stats),
                    backend=backend)
    source = gen.generate()
    if gen.loop_sources:  # the loops of while_loop nodes, generated (compiler/loops.py)
        source += "\n\n# generated loops (condition and body inline)\n"
        source += "\n\n".join(gen.loop_sources.values())
    if gen.kernels:  # shown after the function; the names stay bound to the compiled kernels
        source += ("\n\n# fused kernels (numba-compiled loops; each step is the op's own ufunc)\n"
                   if backend is None else "\n\n# fused kernels (CUDA, through CuPy)\n")
        source += "\n\n".join(gen.kernels.values())
    gen.buffers()
    compiled = {name: gen.ns.values[name] for name in gen.kernels}
    program = CompiledProgram(opt, source, gen.ns.values, stats, fetches, feeds, compiled,
                              backend=backend)
    program.generator = gen  # the profiler generates a timed variant from it
    stats.append({"pass": "codegen", "nodes_before": len(order), "nodes_after": len(order),
                  "changes": [f"{len(source.splitlines())} lines of Python in "
                              f"{time.perf_counter() - start:.4f} s"]})
    return program
