"""The Chrome trace-event JSON that Perfetto and chrome://tracing open."""

from __future__ import annotations

import json
import os


def trace_events(events: list, origin_ns: int) -> list:
    """One complete ("X") event per Event, `ts`/`dur` in µs from `origin_ns`, per thread in
    start order, plus a name for each thread."""
    pid = os.getpid()
    out = []
    threads = {}
    for e in sorted(events, key=lambda e: (e.thread, e.start_ns, -e.end_ns)):
        tid = threads.setdefault(e.thread, len(threads) + 1)
        args = {k: v for k, v in e.args.items() if v is not None}
        out.append({"name": e.name, "cat": e.kind, "ph": "X", "pid": pid, "tid": tid,
                    "ts": (e.start_ns - origin_ns) / 1000, "dur": (e.end_ns - e.start_ns) / 1000,
                    "args": args})
    for ident, tid in threads.items():
        out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                    "args": {"name": f"thread {ident}"}})
    return out


def write_trace(path: str, events: list, origin_ns: int) -> None:
    """Write `{"traceEvents": [...], "displayTimeUnit": "ms"}` to `path`."""
    data = {"traceEvents": trace_events(events, origin_ns), "displayTimeUnit": "ms"}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, default=str)
