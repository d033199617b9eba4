"""`dj.profiler.profile`: start/stop recording, then ask for tables, a timeline or a summary."""

from __future__ import annotations

import _thread
import time
import tracemalloc

from ..core import profiler_hooks as hooks
from ..errors import DongjingError
from .averages import EventTable, aggregate
from .chrome import write_trace
from .events import build
from .summary import summarize


class ProfilerError(DongjingError, RuntimeError):
    """A profiler used out of order (started twice, read while running, ...)."""


class profile:  # noqa: N801 - named like torch.profiler.profile, used as a context manager
    """Record what dongjing runs between `start()` and `stop()` (or inside `with`).

    One event per eager op forward, backward node (`MulBackward0`, `AccumulateGrad`), compiled
    or interpreted program run and each of its nodes / fused kernels, optimizer step, and
    `record_function` range. `record_shapes` adds input shapes and dtypes, `profile_memory`
    bytes allocated (net, via tracemalloc) per event and the peak, `with_stack` the user's
    `file:line` of each eager op. Only the starting thread's work is recorded unless
    `all_threads=True`.

    >>> with dj.profiler.profile() as prof:
    ...     y = (dj.ones(3) * 2).sum()
    >>> [e.name for e in prof.events()]
    ['multiply', 'sum']
    """

    def __init__(self, record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, all_threads: bool = False):
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.all_threads = bool(all_threads)
        self.wants_detail = self.record_shapes or self.profile_memory or self.with_stack
        self.buffer: list = []
        self.tid = None
        self.running = False
        self.start_ns = self.stop_ns = None
        self.cpu_ns = 0
        self.peak_memory = None
        self._raw: list | None = None
        self._events: list | None = None
        self._tracemalloc_started = False
        self._memory_start = 0

    # --- recording ---------------------------------------------------------------------------
    def start(self) -> profile:
        """Begin recording (once per profile object)."""
        if self.running or self._raw is not None:
            raise ProfilerError("this profile was already started; create a new "
                                "dj.profiler.profile() for another recording")
        self.tid = _thread.get_ident()
        if self.profile_memory:
            if not tracemalloc.is_tracing():
                tracemalloc.start()
                self._tracemalloc_started = True
            tracemalloc.reset_peak()
            self._memory_start = tracemalloc.get_traced_memory()[0]
        self.running = True
        self._cpu_start = time.thread_time_ns()
        self.start_ns = hooks.clock()
        hooks.attach(self)
        return self

    def stop(self) -> profile:
        """End recording; events that had not ended by now are dropped."""
        if not self.running:
            raise ProfilerError("profile.stop() without a running profile: call start() first")
        hooks.detach(self)
        self.stop_ns = hooks.clock()
        self.cpu_ns = time.thread_time_ns() - self._cpu_start
        raw, self.buffer = self.buffer, []  # a late append from another thread goes nowhere
        self._raw = [r for r in raw if self.start_ns <= r[0] and r[1] <= self.stop_ns]
        if self.profile_memory:
            self.peak_memory = tracemalloc.get_traced_memory()[1] - self._memory_start
            if self._tracemalloc_started:
                tracemalloc.stop()
        self.running = False
        return self

    def __enter__(self) -> profile:
        return self.start()

    def __exit__(self, *exc) -> bool:
        self.stop()
        return False

    # --- reading -----------------------------------------------------------------------------
    def _finished(self, what: str) -> list:
        if self._raw is None or self.running:
            raise ProfilerError(f"profile.{what}() needs a finished recording: call it after "
                                "the `with` block (or after stop())")
        if self._events is None:
            self._events = build(self._raw)
        return self._events

    def events(self) -> list:
        """Every recorded Event, by start time (see events.Event)."""
        return list(self._finished("events"))

    @property
    def wall_us(self) -> float:
        """Wall time of the recording, µs."""
        self._finished("wall_us")
        return (self.stop_ns - self.start_ns) / 1000

    def key_averages(self, group_by_input_shape: bool = False) -> EventTable:
        """Events aggregated by name (and by input shapes): count, total and self time, mean,
        memory; `.table(sort_by=..., row_limit=...)` prints them."""
        if group_by_input_shape and not self.record_shapes:
            raise ProfilerError("key_averages(group_by_input_shape=True) needs "
                                "profile(record_shapes=True)")
        return aggregate(self._finished("key_averages"), group_by_input_shape,
                         self.profile_memory)

    def export_chrome_trace(self, path: str) -> None:
        """Write the Chrome trace-event JSON (open it in https://ui.perfetto.dev or
        chrome://tracing)."""
        write_trace(path, self._finished("export_chrome_trace"), self.start_ns)

    def summary(self):
        """Where the time went: op compute, framework overhead and idle (see summary.py)."""
        return summarize(self, self._finished("summary"))

    def __repr__(self) -> str:
        state = "running" if self.running else ("finished" if self._raw is not None else "new")
        return f"<dj.profiler.profile {state}>"
