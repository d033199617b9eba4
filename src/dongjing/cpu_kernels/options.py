"""The settings a user may tune in the compiler and the CPU kernels, in one place.

Public as `dj.compiler.set_options(...)`, `dj.compiler.options(...)` (a context manager) and
`dj.compiler.get_options()`. Programs read them when they compile (`Session` on its first run
of a set of fetches, `dj.jit` per signature); eager ops read `threads` at each call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Iterator

from ..errors import DongjingError

__all__ = ["CompilerOptions", "get_options", "set_options", "options"]

FORMULA_POLICIES = ("auto", "always", "never")


@dataclasses.dataclass(frozen=True)
class CompilerOptions:
    """What the compiler and the CPU kernels may be told.

    - `fusion_min_size`: elements a group of elementwise ops needs before it is fused into one
      compiled kernel (numba); smaller groups stay NumPy calls, whose overhead is lower.
    - `kernel_formulas`: how fused kernels compute transcendental ops: "auto" (by a
      measurement on this machine, remembered), "always" (their formulation, e.g. tanh through
      exp), "never" (the math library's own function).
    - `threads`: threads large elementwise calls, fused kernels and `unfold2d` use (1 or 2);
      None takes ``OMP_NUM_THREADS`` (default 2), at most 2 and at most the CPUs there are.
    - `parallel_min_size`: elements from which a kernel or ufunc call is split over the threads.
    """

    fusion_min_size: int = 1 << 17
    kernel_formulas: str = "auto"
    threads: int | None = None
    parallel_min_size: int = 1 << 18


def _from_environment() -> CompilerOptions:
    # DONGJING_KERNEL_FORMULAS=1/0 (or always/never/auto) sets the starting policy
    raw = os.environ.get("DONGJING_KERNEL_FORMULAS", "auto").strip().lower()
    policy = {"1": "always", "0": "never"}.get(raw, raw)
    return CompilerOptions(kernel_formulas=policy if policy in FORMULA_POLICIES else "auto")


_current = _from_environment()
_lock = threading.Lock()


def get_options() -> CompilerOptions:
    """The settings in force (a frozen `CompilerOptions`)."""
    return _current


def _checked(base: CompilerOptions, changes: dict) -> CompilerOptions:
    names = {f.name for f in dataclasses.fields(CompilerOptions)}
    for name, value in changes.items():
        if name not in names:
            raise DongjingError(f"dj.compiler options: unknown setting {name!r}; the settings "
                                f"are {', '.join(sorted(names))}")
        if name == "kernel_formulas":
            if value not in FORMULA_POLICIES:
                raise DongjingError(f"dj.compiler options: kernel_formulas must be one of "
                                    f"{', '.join(FORMULA_POLICIES)}, got {value!r}")
        elif name == "threads" and value is None:
            continue
        elif not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise DongjingError(f"dj.compiler options: {name} must be an int >= 1"
                                f"{' or None' if name == 'threads' else ''}, got {value!r}")
    return dataclasses.replace(base, **changes)


def set_options(**changes: object) -> CompilerOptions:
    """Change settings for the rest of the process (programs compiled from now on); returns
    the settings that were in force before. Unknown names and bad values raise."""
    global _current
    with _lock:
        previous = _current
        _current = _checked(previous, changes)
    return previous


@contextlib.contextmanager
def options(**changes: object) -> Iterator[CompilerOptions]:
    """The settings `changes` inside the ``with`` block (the earlier ones restored after)."""
    global _current
    previous = set_options(**changes)
    try:
        yield _current
    finally:
        _current = previous
