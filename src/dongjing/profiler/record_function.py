"""`record_function`: a named user range on the profiler's timeline."""

from __future__ import annotations

import functools

from ..core import profiler_hooks as hooks


class record_function:  # noqa: N801 - named like torch.profiler.record_function
    """A user range: `with dj.profiler.record_function("data"): ...`, or as a decorator
    `@dj.profiler.record_function("step")` (the function's name when none is given).

    Costs one flag check when no profiler is active.
    """

    def __init__(self, name=None):
        self._fn = None
        if callable(name):  # used bare: @record_function
            self._fn = name
            functools.update_wrapper(self, name)
            name = getattr(name, "__qualname__", "function")
        self.name = name
        self._starts: list = []

    def __enter__(self) -> record_function:
        self._starts.append(hooks.clock() if hooks.on else None)
        return self

    def __exit__(self, *exc) -> bool:
        start = self._starts.pop()
        if start is not None and hooks.on:
            hooks.emit(start, hooks.clock(), "user", self.name or "record_function")
        return False

    def __call__(self, *args, **kwargs):
        if self._fn is not None:  # the bare-decorator form: a call of the wrapped function
            with record_function(self.name):  # a fresh range per call (threads, recursion)
                return self._fn(*args, **kwargs)
        fn = args[0]
        name = self.name or getattr(fn, "__qualname__", "function")

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with record_function(name):
                return fn(*a, **k)

        return wrapper
