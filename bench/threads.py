"""Thread-count environment: must be applied before NumPy (or any BLAS) is imported."""

from __future__ import annotations

import os

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
# Set on this machine by default; they slow a current NumPy, benchmarks run without them.
UNSET_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# Left to each library's default on purpose: OMP_WAIT_POLICY=PASSIVE made PyTorch's W5 step 9x
# slower (36 ms against 3.9 ms, 2 threads) and left every other system unchanged; the 10-100x
# slowdowns once seen were other processes competing for the 2 cores (see docs/performance.md).
# The main table runs in the environment a user has: none of the settings below. `--tuned`
# adds a second, labelled table with them (see docs/performance.md, "Tuned settings"):
# (DONGJING_KEEP_FREED_MEMORY=1 is gone: dongjing's eager results reuse their buffers from its
# own pool, backends/buffer_pool.py, and the variable is ignored.)
# - OPENBLAS_THREAD_TIMEOUT=20: OpenBLAS's idle threads spin for 2^OPENBLAS_THREAD_TIMEOUT
#   cycles after each call (default 2^28, about 0.1 s) and hold the second core meanwhile, so a
#   thread of non-BLAS work started within that time gains nothing: W7's unfold2d on two
#   threads took 2.7 ms alone, 4.9 ms right after a GEMM. With 2^20 (about 0.4 ms) back-to-back
#   GEMMs keep their threads awake (W1 was unchanged) and W7 ran 47.5-51.7 -> 42.9 ms eager,
#   42.2-42.7 -> 35.4 ms at O2; 2^8 slowed W1's small GEMMs by 40%. PyTorch's MKL ignores it.
TUNED_VARS: dict[str, str] = {"OPENBLAS_THREAD_TIMEOUT": "20"}


def _settle(env: dict[str, str], threads: int, tuned: bool) -> dict[str, str]:
    for var in THREAD_VARS:
        env[var] = str(threads)
    for var in UNSET_VARS:
        env.pop(var, None)
    for var, value in TUNED_VARS.items():
        if tuned:
            env[var] = value
        else:  # the default environment: a user's script sets none of them
            env.pop(var, None)
    return env


def thread_env(threads: int, base: dict[str, str] | None = None,
               tuned: bool = False) -> dict[str, str]:
    """A copy of ``base`` (default ``os.environ``) with every thread variable fixed, and the
    tuning variables set (``tuned``) or removed."""
    return _settle(dict(os.environ if base is None else base), threads, tuned)


def apply_thread_env(threads: int, tuned: bool = False) -> None:
    """Fix the thread variables in this process; call before importing NumPy."""
    env = _settle(dict(os.environ), threads, tuned)
    for var in set(os.environ) - set(env):
        del os.environ[var]
    os.environ.update(env)
