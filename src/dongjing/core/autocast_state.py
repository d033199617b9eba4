"""Autocast's per-thread state: the open regions (device type -> enabled, dtype) and whether
casting is suspended (inside a function autocast already cast, and in backward passes).

The op lists live in `autocast_lists`; the casting itself in `dongjing.autocasting`. While any
thread has an enabled region, `eager_modes.plain` is off, so dispatch takes its full path and
asks here.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from . import eager_modes


class _ThreadState(threading.local):
    def __init__(self):
        self.regions: list[tuple[str, bool, object]] = []  # (device type, enabled, dtype)
        self.suspended = 0


_state = _ThreadState()
_lock = threading.Lock()
_enabled_regions = 0  # over all threads: while above 0, the eager short paths are off


def push(device_type: str, enabled: bool, dtype) -> None:
    """Open a region (called by `dj.autocast.__enter__`)."""
    global _enabled_regions
    _state.regions.append((device_type, bool(enabled), dtype))
    if enabled:
        with _lock:
            _enabled_regions += 1
            eager_modes.note("autocast", True)


def pop() -> None:
    """Close the innermost region."""
    global _enabled_regions
    _device_type, enabled, _dtype = _state.regions.pop()
    if enabled:
        with _lock:
            _enabled_regions -= 1
            eager_modes.note("autocast", _enabled_regions > 0)


def region(device_type: str):
    """`(enabled, dtype)` of the innermost region for `device_type` in this thread, or None."""
    for found_type, enabled, dtype in reversed(_state.regions):
        if found_type == device_type:
            return enabled, dtype
    return None


def active_dtype(device_type: str):
    """The low-precision dtype autocast uses now for `device_type`, or None when autocast is
    off there (no region, a disabled region innermost, or casting suspended)."""
    if _state.suspended or not _state.regions:
        return None
    found = region(device_type)
    if found is None or not found[0]:
        return None
    return found[1]


def innermost_active_type() -> str | None:
    """The device type of the innermost enabled region in this thread (None when none is
    active)."""
    if _state.suspended:
        return None
    seen = set()
    for device_type, enabled, _dtype in reversed(_state.regions):
        if device_type not in seen:
            if enabled:
                return device_type
            seen.add(device_type)
    return None


def any_active() -> bool:
    """Whether this thread has an enabled, unsuspended region for some device type."""
    return innermost_active_type() is not None


def key() -> tuple:
    """This thread's autocast state as a hashable value (part of a jit cache key): the
    innermost region per device type, enabled ones only; () when autocast is off."""
    if _state.suspended or not _state.regions:
        return ()
    found = {}
    for device_type, enabled, dtype in reversed(_state.regions):
        found.setdefault(device_type, (enabled, dtype))
    return tuple(sorted((d, str(dtype)) for d, (enabled, dtype) in found.items() if enabled))


@contextmanager
def suspended():
    """No autocasting inside (PyTorch runs an autocast op's own body, and backward, without
    autocast)."""
    _state.suspended += 1
    try:
        yield
    finally:
        _state.suspended -= 1
