"""dongjing shortens OpenBLAS's idle-thread spinning only when it is what loads NumPy, without
leaving the variable in the process's environment, and never over a value of the user's."""

import json
import os
import subprocess
import sys

import pytest

_PROBE = """
import json, os, sys
first = sys.argv[1]
if first == "numpy":
    import numpy
import dongjing
import numpy as np
out = {"applied": dongjing.core.blas_start.applied,
       "variable": os.environ.get("OPENBLAS_THREAD_TIMEOUT")}
if len(sys.argv) > 2:  # CPU the process burns while its main thread sleeps after a GEMM
    import time
    a = np.ones((512, 512), np.float32)
    busy = []
    for _ in range(5):
        a @ a
        t0, w0 = time.process_time(), time.perf_counter()
        time.sleep(0.05)
        busy.append((time.process_time() - t0) / (time.perf_counter() - w0))
    out["busy"] = sorted(busy)[2]
print(json.dumps(out))
"""


def _run(first: str, variable: str | None = None, spin: bool = False) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    if variable is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = variable
    argv = [sys.executable, "-c", _PROBE, first] + (["spin"] if spin else [])
    done = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_applied_when_dongjing_loads_numpy_and_the_variable_is_removed_again():
    assert _run("dongjing") == {"applied": True, "variable": None}


def test_not_applied_when_numpy_was_imported_first():
    assert _run("numpy") == {"applied": False, "variable": None}


def test_a_value_of_the_users_is_left_alone():
    assert _run("dongjing", "28") == {"applied": False, "variable": "28"}


def _threaded_openblas() -> bool:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import numpy  # noqa: F401

    return any(i.get("internal_api") == "openblas" and i.get("num_threads", 1) > 1
               for i in threadpoolctl.threadpool_info())


def test_openblas_threads_do_not_spin_after_a_gemm():
    if not _threaded_openblas():
        pytest.skip("NumPy's BLAS is not a multi-threaded OpenBLAS here")
    # with OpenBLAS's default (2^28 cycles) a worker spins on through the 50 ms sleep
    assert _run("dongjing", spin=True)["busy"] < 0.1
