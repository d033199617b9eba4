"""Data-parallel benchmarks over MPI: all-reduce bandwidth (1 KB .. 64 MB, 2 processes) and the
W4 training step at 1 and 2 processes, with and without overlapping communication.

    python -m bench.distributed            # everything below, 3 times; the best as markdown
    mpiexec -n 2 python -m bench.distributed bandwidth
    mpiexec -n 2 python -m bench.distributed w4 --batch 512 --comm overlap
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.threads import apply_thread_env, thread_env

SIZES = [1 << k for k in range(10, 27, 2)]  # 1 KB, 4 KB, ..., 64 MB
COMM = {  # --comm: how the 2-process step reduces its gradients
    "overlap": 1.0,  # 1 MB buckets: reductions start while backward runs
    "single": 4096.0,  # one bucket, started when the last gradient is ready: no overlap
}


def _median(values):
    values = sorted(values)
    return values[len(values) // 2]


def bandwidth() -> list[dict]:
    """Median time of an in-place float32 Allreduce per message size, on every rank."""
    import numpy as np

    import dongjing.distributed as dist

    dist.init()
    comm = dist.get_communicator()
    from mpi4py import MPI as mpi
    rows = []
    for size in SIZES:
        buf = np.ones(size // 4, np.float32)
        reps = max(5, min(300, (64 << 20) // size))
        times = []
        for _ in range(reps + 2):
            comm.Barrier()
            start = time.perf_counter()
            comm.Allreduce(mpi.IN_PLACE, buf, op=mpi.SUM)
            times.append(time.perf_counter() - start)
        t = max(comm.allgather(_median(times[2:])))
        rows.append({"bytes": size, "seconds": t, "gbytes_per_s": size / t / 1e9})
    return rows


def w4_step(batch: int, comm: str, steps: int) -> dict:
    """Median W4 step time (ms) of this process on `batch` rows; under mpiexec, DDP with the
    bucketing of `comm` ("none": no communication, each rank trains alone)."""
    import numpy as np

    import dongjing as dj
    import dongjing.distributed as dist
    import dongjing.nn as nn
    import dongjing.nn.functional as F
    from bench.workloads import make_w4

    dist.init()
    data = make_w4()
    dj.manual_seed(4)
    model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10))
    if comm != "none":
        model = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=COMM[comm])
    opt = dj.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    rank = dist.get_rank()
    x = dj.tensor(np.ascontiguousarray(data.x[rank * batch:(rank + 1) * batch]))
    y = dj.tensor(data.y[rank * batch:(rank + 1) * batch])
    times = []
    for _ in range(steps + 3):
        dist.barrier()
        start = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - start)
    mine = _median(times[3:]) * 1e3
    every = dist.all_gather(dj.tensor([mine])).numpy().ravel().tolist()
    return {"batch": batch, "comm": comm, "ranks": dist.get_world_size(), "ms": max(every),
            "ms_per_rank": every}


def _run(args: list[str], ranks: int) -> dict | list:
    """Run this module in fresh processes (1 BLAS thread each); rank 0's JSON result."""
    command = [sys.executable, "-m", "bench.distributed", *args]
    if ranks > 1:
        beside = Path(sys.executable).parent / "mpiexec"
        mpiexec = str(beside) if beside.exists() else shutil.which("mpiexec")
        command = [mpiexec, "-n", str(ranks), *command]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=900,
                         env=thread_env(1), cwd=Path(__file__).resolve().parents[1])
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(steps: int, repeat: int) -> str:
    """Every measurement, as the markdown tables of docs/distributed.md. Each runs `repeat`
    times, interleaved with the others, and the fastest run counts (other processes on the
    machine only ever slow a run down)."""
    runs = [(1, 1024, "none"), (1, 512, "none"), (2, 512, "none"), (2, 512, "single"),
            (2, 512, "overlap")]
    best_seconds: dict = {}
    best_ms: dict = {}
    for _ in range(repeat):
        for row in _run(["bandwidth"], 2):
            key = row["bytes"]
            best_seconds[key] = min(best_seconds.get(key, float("inf")), row["seconds"])
        for ranks, batch, comm in runs:
            args = ["w4", "--batch", str(batch), "--comm", comm, "--steps", str(steps)]
            ms = _run(args, ranks)["ms"]
            best_ms[ranks, batch, comm] = min(best_ms.get((ranks, batch, comm), ms), ms)
    lines = ["| message | time (µs) | bandwidth (GB/s) |", "|---:|---:|---:|"]
    for size, seconds in sorted(best_seconds.items()):
        label = f"{size >> 20} MB" if size >= 1 << 20 else f"{size >> 10} KB"
        lines.append(f"| {label} | {seconds * 1e6:,.0f} | {size / seconds / 1e9:.2f} |")
    lines += ["", "| processes | rows per process | gradients | step (ms) |", "|---|---:|---|---:|"]
    what = {"none": "not reduced", "single": "one bucket after backward (no overlap)",
            "overlap": "1 MB buckets during backward (overlap)"}
    for ranks, batch, comm in runs:
        lines.append(f"| {ranks} | {batch} | {what[comm]} | {best_ms[ranks, batch, comm]:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="?", default="report", choices=("report", "bandwidth", "w4"))
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--comm", choices=("none", *COMM), default="overlap")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3, help="report: runs of each, best")
    args = parser.parse_args(argv)
    if args.what == "report":
        print(report(args.steps, args.repeat))
        return
    apply_thread_env(1)
    result = bandwidth() if args.what == "bandwidth" else w4_step(args.batch, args.comm,
                                                                  args.steps)
    import dongjing.distributed as dist

    if dist.get_rank() == 0:
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
