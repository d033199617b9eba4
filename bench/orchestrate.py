"""The parent process: one worker process per thread count (the variables must be set before
NumPy loads), then merge their records and write the results."""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.cli import plan
from bench.report import write_all
from bench.threads import thread_env


def run_worker(threads: int, workloads: list[str], args: argparse.Namespace,
               tmp: Path, tuned: bool = False) -> dict[str, Any]:
    """Run one worker process (in the default environment, or with the tuned settings); its
    record, or one saying why it failed."""
    out = tmp / f"worker-{threads}{'-tuned' if tuned else ''}.json"
    cmd = [sys.executable, "-m", "bench", "--worker", "--threads", str(threads),
           "--workloads", ",".join(workloads), "--out", str(out)]
    if tuned:
        cmd.append("--tuned-env")
    if args.quick:
        cmd.append("--quick")
    if not args.fresh:
        cmd.append("--no-fresh")
    if args.systems:
        cmd += ["--systems", ",".join(args.systems)]
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run(cmd, env=thread_env(threads, tuned=tuned), cwd=root)
    if proc.returncode != 0 or not out.exists():
        label = " tuned" if tuned else ""
        return {"runs": [], "error": f"worker ({threads} threads{label}) exited "
                                     f"{proc.returncode}"}
    return json.loads(out.read_text())


def main(args: argparse.Namespace) -> dict[str, Any]:
    """Run the plan, write results.json/.md/.png under ``args.out_dir``, print the tables."""
    started = time.perf_counter()
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for threads, workloads in plan(args):
            records.append(run_worker(threads, workloads, args, Path(tmp)))
        if args.tuned:
            for threads, workloads in plan(args):
                records.append(run_worker(threads, workloads, args, Path(tmp), tuned=True))
    results = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": "python -m bench " + " ".join(sys.argv[1:]),
        "quick": args.quick,
        "machine": next((r["machine"] for r in records if "machine" in r), {}),
        "timing": next((r["timing"] for r in records if "timing" in r), {}),
        "errors": [r["error"] for r in records if "error" in r],
        "runs": [run for r in records for run in r["runs"]],
        "wall_s": 0.0,
    }
    results["wall_s"] = round(time.perf_counter() - started, 1)
    markdown = write_all(results, args.out_dir)
    print()
    print(markdown)
    return results
