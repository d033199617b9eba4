"""One process-wide answer for the eager per-op path: is anything unusual going on anywhere?

Three things change how an eager op must run: a default graph open in some thread (ops build
nodes), a profiler recording, anomaly mode. Each is owned by its own module, which reports here
when it changes (`note`). While none is active, `plain.on` is True and dispatch takes its short
path after reading one attribute; otherwise it takes the full path, which asks each owner (per
thread where the owner is per thread). Grad mode is not among them: the backward engine turns
recording off for every op it runs, so the short path asks about recording itself.
"""

from __future__ import annotations

import threading


class _Plain:
    __slots__ = ("on",)


plain = _Plain()
plain.on = True

_active: dict[str, bool] = {}
_lock = threading.Lock()


def note(reason: str, active: bool) -> None:
    """Record whether `reason` ("graphs", "profiler", "anomaly") is active now.

    Owners call this right after changing their state, in the thread whose ops the change
    concerns, so that thread's next op already sees the flag."""
    with _lock:
        _active[reason] = bool(active)
        plain.on = not any(_active.values())
