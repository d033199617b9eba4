"""Whether ops record a tape: `no_grad`, `enable_grad`, `set_grad_enabled`."""

from __future__ import annotations

import functools
import threading


class _State(threading.local):
    """Switches read on the eager per-op path, one set per thread (as PyTorch's grad mode):
    a new thread starts with gradients enabled whatever other threads have set. The default
    lives on the class, so reading it in a thread that never set it is one attribute lookup."""

    grad_enabled = True


state = _State()


def is_grad_enabled() -> bool:
    """Whether ops record the tape now (in this thread)."""
    return state.grad_enabled


class set_grad_enabled:
    """Context manager and decorator that sets gradient recording on or off."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)
        self.prev = None

    def __enter__(self):
        self.prev = state.grad_enabled
        state.grad_enabled = self.mode
        return self

    def __exit__(self, *exc):
        state.grad_enabled = self.prev
        return False

    def __call__(self, fn):
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

    def __init__(self):
        super().__init__(False)


class enable_grad(set_grad_enabled):
    """`with dj.enable_grad():` turns recording back on inside a `no_grad` region."""

    def __init__(self):
        super().__init__(True)
