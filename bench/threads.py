"""Thread-count environment: must be applied before NumPy (or any BLAS) is imported."""

from __future__ import annotations

import os

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
# Set on this machine by default; they slow a current NumPy, benchmarks run without them.
UNSET_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# Left to each library's default on purpose: OMP_WAIT_POLICY=PASSIVE made PyTorch's W5 step 9x
# slower (36 ms against 3.9 ms, 2 threads) and left every other system unchanged; the 10-100x
# slowdowns once seen were other processes competing for the 2 cores (see docs/performance.md).
# dongjing no longer retunes glibc's allocator at import; eager runs keep freed memory for
# reuse as they did (W3 eager is several times slower without it), and every system in a
# worker shares the setting, as it did when importing dongjing applied it.
FIXED_VARS: dict[str, str] = {"DONGJING_KEEP_FREED_MEMORY": "1"}


def thread_env(threads: int, base: dict[str, str] | None = None) -> dict[str, str]:
    """Return a copy of ``base`` (default ``os.environ``) with every thread variable fixed."""
    env = dict(os.environ if base is None else base)
    for var in THREAD_VARS:
        env[var] = str(threads)
    env.update(FIXED_VARS)
    for var in UNSET_VARS:
        env.pop(var, None)
    return env


def apply_thread_env(threads: int) -> None:
    """Fix the thread variables in this process; call before importing NumPy."""
    os.environ.update({var: str(threads) for var in THREAD_VARS})
    os.environ.update(FIXED_VARS)
    for var in UNSET_VARS:
        os.environ.pop(var, None)
