"""Thread-count environment: must be applied before NumPy (or any BLAS) is imported."""

from __future__ import annotations

import os

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
# Set on this machine by default; they slow a current NumPy, benchmarks run without them.
UNSET_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# PyTorch's OpenMP threads spin after each op by default; in one process with NumPy's OpenBLAS
# threads on 2 cores that spinning made every system's W1 step 10-100x slower and erratic.
FIXED_VARS = {"OMP_WAIT_POLICY": "PASSIVE"}


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
