"""The profiler's side of the hooks in dongjing's run paths.

The core reads one flag, `on`, before calling in (`if hooks.on: ...`), so with no profiler
active nothing here runs and no clock is read. Events are plain tuples
`(start_ns, end_ns, thread_id, kind, name, args)` appended to each listening recorder.
"""

from __future__ import annotations

import _thread
import time as _time
import tracemalloc

from . import eager_modes as _eager_modes
from .user_code import user_source_line

on = False  # True while at least one profiler records (the only thing the core reads)
listeners: tuple = ()  # the active recorders (see profile.Recorder)
detail = False  # some listener wants shapes, memory or stacks (slower hooks)

# Filled by the profiler when it loads (this module imports nothing above core): the
# instrumented runs of a compiled program and of the interpreter's steps
# (dongjing.profiler.compiled). See `install`.
run_instrumented = None
timed_steps = None

_get_ident = _thread.get_ident


def install(**callbacks) -> None:
    """Set the callbacks the profiler provides (`run_instrumented`, `timed_steps`); the core
    calls them only while a profiler records."""
    for name, fn in callbacks.items():
        if name not in ("run_instrumented", "timed_steps"):
            raise TypeError(f"profiler_hooks.install: no hook named {name!r}")
        globals()[name] = fn


def clock() -> int:
    """The profiler's clock: nanoseconds from `time.perf_counter_ns` (looked up on each call)."""
    return _time.perf_counter_ns()


def attach(recorder) -> None:
    """Start delivering events to `recorder` (and turn the hooks on)."""
    global listeners, on, detail
    listeners = listeners + (recorder,)
    detail = any(r.wants_detail for r in listeners)
    on = True
    _eager_modes.note("profiler", True)


def detach(recorder) -> None:
    """Stop delivering events to `recorder` (the hooks go off with the last one)."""
    global listeners, on, detail
    listeners = tuple(r for r in listeners if r is not recorder)
    detail = any(r.wants_detail for r in listeners)
    on = bool(listeners)
    _eager_modes.note("profiler", on)


def emit(start: int, end: int, kind: str, name: str, args=None) -> None:
    """Deliver one finished event to every recorder that takes this thread's work."""
    tid = _get_ident()
    event = (start, end, tid, kind, name, args)
    for rec in listeners:
        if rec.all_threads or rec.tid == tid:
            rec.buffer.append(event)


def _details(arrays, out=None) -> dict | None:
    """Shapes/dtypes of the inputs and the caller's line, for the recorders that asked."""
    want = {}
    for rec in listeners:
        if rec.record_shapes:
            want["shapes"] = True
        if rec.with_stack:
            want["stack"] = True
    args = {}
    if "shapes" in want:
        args["input_shapes"] = [list(getattr(a, "shape", ())) for a in arrays]
        args["input_dtypes"] = [str(getattr(a, "dtype", type(a).__name__)) for a in arrays]
    if "stack" in want:
        args["source"] = user_source_line()
    return args or None


def _memory() -> int:
    return tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0


def op_forward(op, arrays, attrs):
    """An eager op's forward, timed: one "op" event named after the op."""
    if detail:
        args = _details(arrays) or {}
        mem = _memory()
        start = _time.perf_counter_ns()
        out = op.forward(*arrays, **attrs)
        end = _time.perf_counter_ns()
        args["memory"] = _memory() - mem
        emit(start, end, "op", op.name, args)
        return out
    start = _time.perf_counter_ns()
    out = op.forward(*arrays, **attrs)
    emit(start, _time.perf_counter_ns(), "op", op.name)
    return out


def call_range(kind: str, name: str, fn, *args):
    """`fn(*args)` as one event of `kind` (backward nodes, optimizer steps, ...)."""
    mem = _memory() if detail else 0
    start = _time.perf_counter_ns()
    result = fn(*args)
    end = _time.perf_counter_ns()
    emit(start, end, kind, name, {"memory": _memory() - mem} if detail else None)
    return result


def backward_node(apply_node, node, grad, retain_graph):
    """One backward node (`MulBackward0`, ...): its vjp's ops nest inside the event."""
    return call_range("backward", node.name(), apply_node, node, grad, retain_graph)


def accumulate(accumulate_fn, node, *args):
    """Adding a gradient into a leaf's `.grad` (`AccumulateGrad`)."""
    return call_range("backward", "AccumulateGrad", accumulate_fn, node, *args)


def optimizer_step(optimizer, step, closure):
    """`optimizer.step()` as one event named like PyTorch's (`Optimizer.step#SGD.step`); the
    caller runs a step being traced (nothing runs now) without it."""
    name = f"Optimizer.step#{type(optimizer).__name__}.step"
    return call_range("optimizer", name, step, closure)


def run_compiled(program, feed_arrays):
    """A compiled program's run, through its instrumented variant (one event per node)."""
    return run_instrumented(program, feed_arrays)


def interpreted_steps(interpreter):
    """The interpreter's steps, yielded one by one; the time each took becomes a "node" event
    (and the whole walk a "program" event)."""
    return timed_steps(interpreter)
