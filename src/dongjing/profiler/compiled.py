"""Profiling programs: the timed variant of a compiled program (generated on first use while
profiling, then cached) and the timed walk of the interpreter's steps."""

from __future__ import annotations

import time

from ..compiler.compiled_program import register_source
from ..core import profiler_hooks as hooks
from ..graph.program import commit_assignments
from ..runtime.interpreter import needed_nodes


class TimedVariant:
    """The instrumented twin of a CompiledProgram: same namespace and buffers, plus `_clk()`
    ticks after each node; `labels[i]` describes what ran between ticks i and i+1."""

    def __init__(self, program):
        gen = program.generator
        source = gen.generate("program_timed", timed=True)
        self.labels = [_label(t) for t in gen.ticks]
        self.filename = program.filename[:-1] + "-timed>"
        register_source(self, self.filename, source)  # dropped with this variant
        namespace = dict(program.namespace)  # same buffers, kernels and constants
        namespace["_clk"] = time.perf_counter_ns
        exec(compile(source, self.filename, "exec"), namespace)  # our generated source
        self.run = namespace["program_timed"]
        self.source = source
        self.title = f"program {program.graph.name}"


def _label(tick) -> tuple:
    """(kind, name, args) of the event for one tick of a timed program."""
    if isinstance(tick, str):
        return "runtime", f"[{tick}]", None
    args = {"node": "%" + tick.name, "source": tick.source,
            "input_shapes": [_shape(i.shape) for i in tick.inputs],
            "input_dtypes": [str(i.dtype) for i in tick.inputs]}
    if tick.op.kind == "fused":
        body = tick.attrs["body"]
        args["members"] = [{"node": "%" + n, "op": op, "source": src}
                           for n, op, src in getattr(body, "members", ())]
        args["elements"] = body.size
        return "kernel", tick.op.name, args
    return "node", tick.op.name, args


def _shape(shape) -> list:
    return [-1 if d is None else int(d) for d in shape]


def variant_of(program) -> TimedVariant | None:
    """The (cached) timed variant of a compiled program, or None if it cannot have one."""
    variant = program.__dict__.get("_timed_variant")
    if variant is None and getattr(program, "generator", None) is not None:
        start = hooks.clock()
        variant = program._timed_variant = TimedVariant(program)
        hooks.emit(start, hooks.clock(), "profiler", "[profiler] generate timed program")
    return variant


def run_instrumented(program, feed_arrays: list) -> list:
    """Run `program` through its timed variant; emit one event per node and one for the run."""
    variant = variant_of(program)
    mem = hooks._memory() if hooks.detail else 0
    start = hooks.clock()
    if variant is None:
        outputs, pending = program._run(feed_arrays)
        ticks = ()
    else:
        outputs, pending, ticks = variant.run(feed_arrays)
    commit_assignments(pending)
    end = hooks.clock()
    emit = hooks.emit
    if variant is not None:
        for i, (kind, name, args) in enumerate(variant.labels):
            emit(ticks[i], ticks[i + 1], kind, name, args)
        title = variant.title
    else:
        title = f"program {program.graph.name}"
    args = {"memory": hooks._memory() - mem} if hooks.detail else None
    emit(start, end, "program", title, args)
    return outputs


def _interpreter_labels(interpreter) -> list:
    """(kind, name, args) per interpreter step (None for constant/variable reads)."""
    fed = set(interpreter.feed_nodes)
    nodes = [n for n in needed_nodes(interpreter.fetch_nodes, fed) if n not in fed]
    labels = []
    for node in nodes:
        if node.op.kind == "source":
            labels.append(None)
        else:
            labels.append(_label(node))
    return labels


def timed_steps(interpreter):
    """Yield the interpreter's steps; the time until the next request is that step's event."""
    labels = interpreter.__dict__.get("_timed_labels")
    if labels is None:
        labels = interpreter._timed_labels = _interpreter_labels(interpreter)
    emit = hooks.emit
    start = before = hooks.clock()
    for step, label in zip(interpreter.steps, labels):
        yield step
        now = hooks.clock()
        if label is not None:
            emit(before, now, label[0], label[1], label[2])
        before = now
    emit(start, before, "program", f"program {interpreter.graph.name} (interpreted)")


hooks.install(run_instrumented=run_instrumented, timed_steps=timed_steps)
