"""``python -m bench --device cuda``: W1-W7 on one GPU in dongjing (eager, static, jit), PyTorch,
JAX and hand-written CuPy. One worker process per system (``bench.gpu_run``), so that a crash,
a hang or a lost CUDA context costs only the cell it happened in: a fresh worker runs the
workloads left. Results go to ``gpu_results.md`` and ``gpu_results.json``."""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.cli import DEFAULT_THREADS, GPU_WORKLOADS
from bench.gpu_report import markdown
from bench.gpu_run import GpuTiming
from bench.gpu_systems import NAMES as SYSTEMS
from bench.machine import cpu_model
from bench.threads import thread_env

ROOT = Path(__file__).resolve().parent.parent
QUICK_WORKLOADS = ["W1", "W2", "W3", "W4", "W5"]
# A cell (build, check, timing) running longer is killed; a system's worker(s) together get
# a budget, so that a system that hangs in every cell cannot take the whole run.
CELL_TIMEOUT_S, SYSTEM_BUDGET_S = 60.0, 75.0
QUICK_CELL_TIMEOUT_S, QUICK_SYSTEM_BUDGET_S = 30.0, 35.0
# float32 GEMMs in every library (cuBLAS and cuDNN honour the first; CuPy reads the second)
NO_TF32 = {"NVIDIA_TF32_OVERRIDE": "0", "CUPY_TF32": "0"}


def worker_command(name: str, keys: list[str], args: argparse.Namespace, out: Path) -> list[str]:
    cmd = [sys.executable, "-m", "bench", "--device", args.device, "--gpu-worker", name,
           "--workloads", ",".join(keys), "--out", str(out)]
    return cmd + ["--quick"] * bool(args.quick) + ["--tiny"] * bool(getattr(args, "tiny", False))


def read_records(path: Path) -> list[dict[str, Any]]:
    """The complete JSON lines a worker has written so far."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:  # a line being written
            break
    return records


def pending(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The "start" record of the cell running now (started, not finished), if any."""
    done = {r["workload"] for r in records if r.get("event") == "cell"}
    starts = [r for r in records if r.get("event") == "start" and r["workload"] not in done]
    return starts[-1] if starts else None


def run_worker(cmd: list[str], out: Path, env: dict[str, str], cell_timeout_s: float,
               deadline: float) -> tuple[int, str, list[dict[str, Any]]]:
    """Run one worker; its exit status, why it was killed ("" if it was not: "timeout" when a
    cell ran past ``cell_timeout_s``, "budget" at ``deadline``, a ``time.time()``), and its
    records."""
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT)
    killed = ""
    while proc.poll() is None:
        time.sleep(0.1)
        cell = pending(read_records(out))
        if cell is not None and time.time() - cell["time"] > cell_timeout_s:
            killed = "timeout"
        elif time.time() > deadline:
            killed = "budget"
        if killed:
            proc.kill()
            break
    rc = proc.wait()
    return rc, killed, read_records(out)


def describe_exit(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exited with status {rc}"


def run_system(name: str, keys: list[str], args: argparse.Namespace, tmp: Path,
               env: dict[str, str], cell_timeout_s: float,
               budget_s: float = float("inf")) -> list[dict[str, Any]]:
    """Every cell of one system, in as many worker processes as crashes make necessary, all
    within ``budget_s`` seconds (cells not reached by then are recorded as not run)."""
    deadline = time.time() + budget_s
    cells: dict[str, dict[str, Any]] = {}

    def failed(key: str, why: str) -> None:
        cells[key] = {"system": name, "workload": key, "status": "error", "problems": [why]}

    left = list(keys)
    for attempt in range(len(keys) + 1):
        out = tmp / f"{name}-{attempt}.jsonl"
        rc, killed, records = run_worker(worker_command(name, left, args, out), out, env,
                                         cell_timeout_s, deadline)
        cells.update({r["workload"]: r for r in records if r.get("event") == "cell"})
        culprit = pending(records)
        left = [k for k in left if k not in cells]
        if culprit is not None:  # the cell it died in, or was killed in
            failed(culprit["workload"], {
                "timeout": f"timed out after {cell_timeout_s:.0f} s (worker killed)",
                "budget": f"stopped: the system's budget of {budget_s:.0f} s was spent",
            }.get(killed, f"worker {describe_exit(rc)} during this cell"))
            left.remove(culprit["workload"])
        elif left and rc != 3:  # died before any cell (3: a sticky CUDA error, cell recorded)
            for key in left:
                failed(key, f"worker {describe_exit(rc)} before its first cell")
            break
        if left and (killed == "budget" or time.time() > deadline):
            for key in left:
                failed(key, f"not run: the system's budget of {budget_s:.0f} s was spent")
            break
        if not left:
            break
        print(f"  {name}: a fresh worker for {','.join(left)}", flush=True)
    return [cells[k] for k in keys if k in cells]


@functools.cache
def nvidia_smi_name() -> str:
    if shutil.which("nvidia-smi") is None:
        return ""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""


def device_name(target: str, cells: list[dict[str, Any]]) -> str:
    if target != "cuda":
        return f"none: {target} (the CPU stand-ins on {cpu_model()})"
    return nvidia_smi_name() or next((c["gpu"] for c in cells if c.get("gpu")), "unknown GPU")


def chosen_systems(names: list[str] | None) -> list[str]:
    if not names:
        return list(SYSTEMS)
    bad = [n for n in names if n not in SYSTEMS]
    if bad:
        raise SystemExit(f"--systems: unknown GPU system(s) {bad}; choose from {list(SYSTEMS)}")
    return [n for n in SYSTEMS if n in names]


def write(results: dict[str, Any], out_dir: Path) -> str:
    """gpu_results.json and gpu_results.md under ``out_dir``; the Markdown."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "gpu_results.json").write_text(json.dumps(results, indent=1) + "\n")
    text = markdown(results)
    (out_dir / "gpu_results.md").write_text(text)
    return text


def main(args: argparse.Namespace) -> dict[str, Any]:
    """Run every chosen system's worker in turn; write and print the results."""
    started = time.perf_counter()
    keys = args.workloads or (QUICK_WORKLOADS if args.quick else GPU_WORKLOADS)
    systems = chosen_systems(args.systems)
    timeout = QUICK_CELL_TIMEOUT_S if args.quick else CELL_TIMEOUT_S
    budget = QUICK_SYSTEM_BUDGET_S if args.quick else SYSTEM_BUDGET_S
    env = thread_env((args.threads or [DEFAULT_THREADS])[0])
    env.update(NO_TF32)
    results: dict[str, Any] = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": "python -m bench " + " ".join(sys.argv[1:]),
        "target": args.device, "device": "", "quick": args.quick,
        "tiny": bool(getattr(args, "tiny", False)), "workloads": keys, "systems": systems,
        "timing": vars(GpuTiming.quick() if args.quick else GpuTiming()),
        "cell_timeout_s": timeout, "system_budget_s": budget, "cells": [], "wall_s": 0.0,
    }
    print(f"GPU benchmark on {args.device}: {', '.join(systems)} x {', '.join(keys)}", flush=True)
    with tempfile.TemporaryDirectory(prefix="dj-gpu-bench-") as tmp:
        for name in systems:
            print(f"[{time.perf_counter() - started:6.1f}s] {name}", flush=True)
            results["cells"] += run_system(name, keys, args, Path(tmp), env, timeout, budget)
            results["device"] = device_name(args.device, results["cells"])
            results["wall_s"] = round(time.perf_counter() - started, 1)
            write(results, args.out_dir)  # after each system: a partial run keeps its cells
    text = write(results, args.out_dir)
    print()
    print(text)
    return results
