"""`profile.summary()`: the recording's wall time split into op compute, framework overhead
and idle — the split the dynamic-versus-static argument is about."""

from __future__ import annotations

from .events import COMPUTE_KINDS

_FRAMEWORK_KINDS = ("backward", "program", "optimizer", "runtime")


class Summary:
    """Times in µs for the thread that ran the profile.

    - `compute_us`: inside op forwards, compiled nodes and fused kernels (their self time);
    - `overhead_us`: the rest of the on-CPU time: dispatch, tape and backward bookkeeping,
      program glue, Python between events (`in_framework_events_us` of it is measured inside
      backward-node, program and optimizer events);
    - `idle_us`: off-CPU time outside compute (sleeping, waiting for I/O or for a CPU held
      by other processes): wall minus the thread's CPU time.

    The profiler's own one-time work (generating a timed program variant) is left out.
    """

    def __init__(self, wall_us: float, compute_us: float, overhead_us: float, idle_us: float,
                 in_framework_events_us: float, events: int):
        self.wall_us, self.compute_us = wall_us, compute_us
        self.overhead_us, self.idle_us = overhead_us, idle_us
        self.in_framework_events_us = in_framework_events_us
        self.events = events

    def __str__(self) -> str:
        wall = self.wall_us or 1.0

        def row(label, us):
            return f"  {label:<34}{us:>14.1f} us {100 * us / wall:6.1f}%"

        return "\n".join([
            f"wall time {self.wall_us:.1f} us, {self.events} events",
            row("op compute", self.compute_us),
            row("framework overhead", self.overhead_us),
            row("  in backward/program/optimizer", min(self.in_framework_events_us,
                                                      self.overhead_us)),
            row("  dispatch, tape, Python between", max(0.0, self.overhead_us
                                                        - self.in_framework_events_us)),
            row("idle (off CPU)", self.idle_us),
        ])

    __repr__ = __str__


def summarize(prof, events: list) -> Summary:
    """The Summary of a finished profile (its own thread's events)."""
    own = [e for e in events if e.thread == prof.tid]
    own_cost = sum(e.duration_us for e in own if e.kind == "profiler")
    wall = prof.wall_us - own_cost  # the profiler's own one-time work (timed variants) is left out
    compute = sum(e.self_us for e in own if e.kind in COMPUTE_KINDS)
    framework = sum(e.self_us for e in own if e.kind in _FRAMEWORK_KINDS)
    idle = min(max(0.0, wall - (prof.cpu_ns / 1000 - own_cost)), max(0.0, wall - compute))
    overhead = max(0.0, wall - compute - idle)
    return Summary(wall, compute, overhead, idle, framework,
                   len([e for e in own if e.kind != "profiler"]))
