"""First call and peak memory of one system on one workload, each in a fresh process.

``python -m bench.fresh --workload W3 --system dj-static-O2 [--tiny]`` imports the system's
library and builds the data, then times building the runner plus its first step (for a
compiled system: trace, optimize, codegen and kernels) and reports how far the process's peak
resident memory rose above its level before the build, over that call and a few more steps.
The worker runs it once per system (compiled systems twice, the second time with the numba
kernels the first one cached on disk), after timing, so that nothing else runs beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

LIBRARIES = {"dj-": "dongjing", "torch": "torch", "jax": "jax"}
MORE_STEPS = 3  # after the first call: the steady-state peak (buffers, tape) counts too


def _status_kb(field: str) -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Set this process's peak RSS (VmHWM) to its current RSS (Linux); False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def measure(key: str, system: str, tiny: bool = False) -> dict[str, Any]:
    """In this (fresh) process: seconds of build + first step, and peak RSS growth in MiB."""
    import gc
    import importlib

    from bench.systems import all_systems
    from bench.workloads import WORKLOADS

    sys_ = next(s for s in all_systems() if s.name == system)
    for prefix, module in LIBRARIES.items():
        if system.startswith(prefix):
            importlib.import_module(module)  # importing is not part of the first call
    wl = WORKLOADS[key]
    data = wl.data(tiny)
    gc.collect()
    base_kb = _status_kb("VmRSS")
    resettable = _reset_peak()
    t0 = time.perf_counter()
    runner = sys_.build(wl.kind, data)
    runner.step()
    first = time.perf_counter() - t0
    peak_kb = _status_kb("VmHWM") if resettable else None
    # the steady state apart: what a step allocates above what stays resident after the first
    # call (libraries such as numba/LLVM load during a first call and stay)
    gc.collect()
    resident_kb = _status_kb("VmRSS")
    _reset_peak()
    for _ in range(MORE_STEPS):
        runner.step()
    step_kb = _status_kb("VmHWM") if resettable else None
    peak_kb = None if peak_kb is None or step_kb is None else max(peak_kb, step_kb)
    growth = None if peak_kb is None or base_kb is None else (peak_kb - base_kb) / 1024
    step = None if step_kb is None or resident_kb is None else (step_kb - resident_kb) / 1024
    return {"first_call_s": first, "rss_growth_mb": growth, "step_peak_mb": step}


def run_fresh(key: str, system: str, tiny: bool = False, cache_dir: str | None = None,
              timeout_s: float = 600) -> dict[str, Any]:
    """``measure`` in a child process (same environment, the kernel cache in ``cache_dir``);
    its result, or ``{"error": ...}``."""
    env = dict(os.environ)
    if cache_dir is not None:
        env["DONGJING_CACHE_DIR"] = cache_dir
    cmd = [sys.executable, "-m", "bench.fresh", "--workload", key, "--system", system]
    if tiny:
        cmd.append("--tiny")
    root = Path(__file__).resolve().parent.parent
    try:
        proc = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"fresh first call timed out after {timeout_s:.0f} s"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"fresh first call exited {proc.returncode}: {tail}"}
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", required=True)
    p.add_argument("--system", required=True)
    p.add_argument("--tiny", action="store_true")
    args = p.parse_args(argv)
    print(json.dumps(measure(args.workload.upper(), args.system, args.tiny)))


if __name__ == "__main__":
    main()
