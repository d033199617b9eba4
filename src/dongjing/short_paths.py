"""Every short path of eager execution, declared by name, and the one switch that turns them off.

A short path skips general machinery (dispatch's checks, the backward engine's set-up, an op's
dispatch for a gradient's product, one thread for large NumPy calls) and must give the general
path's answer bit for bit. Each one is declared here (`declare`, at import of the module that
holds it, beside a `# short path: NAME` comment at the site) so that `tests/test_short_paths.py`
can enumerate them and insist on a differential test for each.

    with dongjing.short_paths.disabled():   # every short path off: the general path only
        ...

The switch is process-wide (as `eager_modes` is), meant for tests and the fuzzer.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass

from .core import eager_modes


class _State:
    __slots__ = ("on",)


state = _State()
state.on = True  # `state.on`: short paths may be taken (read at each site, one attribute)


@dataclass(frozen=True)
class ShortPath:
    """A declared short path: its name, the module that holds it, what it skips."""

    name: str
    module: str
    skips: str


REGISTRY: dict[str, ShortPath] = {}
_lock = threading.Lock()
_depth = [0]  # nested `disabled()` blocks


def declare(name: str, module: str, skips: str) -> str:
    """Record the short path `name` of `module` (what general work it skips); returns `name`."""
    if name in REGISTRY and REGISTRY[name].module != module:
        raise ValueError(f"short path {name!r} is declared by {REGISTRY[name].module} already")
    REGISTRY[name] = ShortPath(name, module, skips)
    return name


def enabled() -> bool:
    """Whether short paths may be taken now."""
    return state.on


@contextlib.contextmanager
def disabled():
    """Within the block every declared short path is off: eager ops, backward and the ops'
    fast forms take their general path (for a differential check of the two)."""
    with _lock:
        _depth[0] += 1
        state.on = False
        eager_modes.note("short paths off", True)  # dispatch's plain-mode paths off too
    try:
        yield
    finally:
        with _lock:
            _depth[0] -= 1
            if not _depth[0]:
                state.on = True
                eager_modes.note("short paths off", False)
