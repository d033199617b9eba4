"""Whether ops record a tape: `no_grad`, `enable_grad`, `set_grad_enabled`."""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")

# The mode of the running thread (a new thread starts with recording on, whatever others set;
# an asyncio task sees the mode of the code that created it). A context variable rather than
# a threading.local: reading it is a C call, a third of a thread-local attribute lookup.
_enabled = contextvars.ContextVar("dongjing.grad_enabled", default=True)
recording = _enabled.get  # () -> bool: whether ops record the tape now, in this thread


class _State:
    """`state.grad_enabled`: the running thread's mode, for readers off the per-op path."""

    __slots__ = ()

    @property
    def grad_enabled(self) -> bool:
        return _enabled.get()


state = _State()

# Threads whose recording is off now (an upper bound: a thread that ends with it off stays
# counted). While it is 0, the eager per-op path knows recording is on without asking.
disabled_threads = 0
_count_lock = threading.Lock()


def write(enabled: bool) -> None:
    """Set this thread's grad mode (every write goes through here, keeping the count)."""
    global disabled_threads
    enabled = bool(enabled)
    if _enabled.get() == enabled:
        return
    with _count_lock:
        disabled_threads += -1 if enabled else 1
    _enabled.set(enabled)


def is_grad_enabled() -> bool:
    """Whether ops record the tape now (in this thread)."""
    return _enabled.get()


class set_grad_enabled:
    """Sets gradient recording on or off, as in PyTorch: called as a statement
    (`dj.set_grad_enabled(False)`) it takes effect at once and lasts until changed; as a
    context manager the previous mode comes back on exit; as a decorator it applies to each
    call of the function (and leaves the mode as it was at decoration)."""

    _applies_at_once = True  # no_grad / enable_grad act only when entered

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)
        self.prev = state.grad_enabled
        if self._applies_at_once:
            write(self.mode)

    def __enter__(self):
        if not self._applies_at_once:
            self.prev = state.grad_enabled
        write(self.mode)
        return self

    def __exit__(self, *exc):
        write(self.prev)
        return False

    def __call__(self, fn: Callable[_P, _R]) -> Callable[_P, _R]:
        if self._applies_at_once:  # decorating is not a statement: undo the construction
            write(self.prev)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self._fresh():
                return fn(*args, **kwargs)

        return wrapper

    def _fresh(self):
        """A new context with this one's setting (each decorated call gets its own)."""
        return set_grad_enabled(self.mode)


class no_grad(set_grad_enabled):
    """`with dj.no_grad():` (or `@dj.no_grad()`): ops inside record nothing for backward."""

    _applies_at_once = False

    def __init__(self):
        super().__init__(False)


class enable_grad(set_grad_enabled):
    """`with dj.enable_grad():` turns recording back on inside a `no_grad` region."""

    _applies_at_once = False

    def __init__(self):
        super().__init__(True)
