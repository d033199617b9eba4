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
# OpenBLAS's idle threads spin for 2^OPENBLAS_THREAD_TIMEOUT cycles after each call (default
# 2^28, about 0.1 s) and hold the second core meanwhile, so a thread of non-BLAS work started
# within that time gains nothing: W7's unfold2d on two threads took 2.7 ms alone, 4.9 ms right
# after a GEMM. With 2^20 (about 0.4 ms) back-to-back GEMMs keep their threads awake (W1 was
# unchanged) and W7 ran 47.5-51.7 -> 42.9 ms eager, 42.2-42.7 -> 35.4 ms at O2; 2^8 slowed W1's
# small GEMMs by 40%. Every system in a worker runs under it (PyTorch's MKL ignores it).
FIXED_VARS: dict[str, str] = {"DONGJING_KEEP_FREED_MEMORY": "1", "OPENBLAS_THREAD_TIMEOUT": "20"}


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
