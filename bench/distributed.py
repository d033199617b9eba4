"""Data-parallel benchmarks over MPI: all-reduce bandwidth (1 KB .. 64 MB, 2 processes) and the
W4 training step at 1 and 2 processes, with and without overlapping communication.

    python -m bench.distributed            # everything below, 3 times; the best as markdown
    mpiexec -n 2 python -m bench.distributed bandwidth
    mpiexec -n 2 python -m bench.distributed w4 --batch 512 --comm overlap
    mpiexec -n 2 python -m bench.distributed progress     # does MPI move during compute?
    mpiexec -n 2 python -m bench.distributed link   # latency and bandwidth, saved for the planner
    mpiexec -n 2 python -m bench.distributed plans  # distribute="auto": predicted vs measured
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.distributed_plans import plans
from bench.threads import apply_thread_env, thread_env

SIZES = [1 << k for k in range(10, 27, 2)]  # 1 KB, 4 KB, ..., 64 MB
COMM = {  # --comm: how the 2-process step reduces its gradients (bucket cap in MB)
    "overlap": 1.0,  # 1 MB buckets, moved along by DDP's helper thread while backward runs
    "hooks": 1.0,  # 1 MB buckets, polled only from the gradient hooks (no helper thread)
    "single": 4096.0,  # one bucket, started when the last gradient is ready: no overlap
}
PHASES = ("forward", "backward", "copy_in", "wait", "step")


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


def progress(mb: float = 4.0, reps: int = 25) -> dict:
    """Does a started all-reduce move while this process computes? Start an `mb` MB
    Iallreduce, run W4's first-layer weight-gradient product (no MPI calls), then wait: the
    median product and wait times (ms, the slower rank's), with the reduction left alone
    ("alone") and with DDP's helper thread polling it ("helper"), interleaved."""
    import numpy as np

    import dongjing.distributed as dist
    from dongjing.distributed import overlap

    dist.init()
    if dist.get_world_size() < 2:
        raise SystemExit("progress: run it under mpiexec -n 2")
    from mpi4py import MPI

    comm = dist.get_communicator().Dup()
    rng = np.random.default_rng(0)
    g = rng.standard_normal((512, 1024)).astype(np.float32)
    x = rng.standard_normal((512, 784)).astype(np.float32)
    buf = np.ones(int(mb * (1 << 20)) // 4, np.float32)
    times: dict = {"alone": ([], []), "helper": ([], [])}
    helper = overlap.helper()
    for _ in range(reps + 2):
        for mode, (compute, wait) in times.items():
            comm.Barrier()
            start = time.perf_counter()
            if mode == "helper":
                job = overlap.Job(comm, MPI, 1)
                helper.submit(job)
                job.ready(0, buf)
                helper.wake()
            else:
                request = comm.Iallreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
            g.T @ x
            computed = time.perf_counter()
            if mode == "helper":
                helper.retire(job)
                job.launch_ready()
                (request,) = job.requests
            request.Wait()
            compute.append(computed - start)
            wait.append(time.perf_counter() - computed)
    mine = [_median(v[2:]) * 1e3 for pair in times.values() for v in pair]
    every = comm.allgather(mine)
    worst = [max(rank[i] for rank in every) for i in range(4)]
    return {"mb": mb, "alone": {"compute_ms": worst[0], "wait_ms": worst[1]},
            "helper": {"compute_ms": worst[2], "wait_ms": worst[3]}}


def _timed(totals: dict, key: str, fn):
    def run(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[key] = totals.get(key, 0.0) + time.perf_counter() - start

    return run


def w4_step(batch: int, comm: str, steps: int, interval: float | None = None) -> dict:
    """Median W4 step time (ms) of this process on `batch` rows; under mpiexec, DDP with the
    bucketing of `comm` ("none": no communication, each rank trains alone).

    Also the median time per phase on every rank: forward, backward (with the gradient
    hooks), copy_in (the hooks' copies of gradients into buckets, part of backward), wait
    (the end of backward: waiting for the reductions and setting `.grad`) and the optimizer
    step. `interval`: the helper thread's polling interval in seconds (default: DDP's)."""
    import numpy as np

    import dongjing as dj
    import dongjing.distributed as dist
    import dongjing.nn as nn
    import dongjing.nn.functional as F
    from bench.workloads import make_w4

    dist.init()
    if interval is not None:
        from dongjing.distributed import overlap

        overlap.helper().interval = interval
    data = make_w4()
    dj.manual_seed(4)
    model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10))
    totals: dict = {}
    if comm != "none":
        model = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=COMM[comm])
        reducer = model._reducer
        if reducer is not None:
            reducer.use_thread = reducer.use_thread and comm != "hooks"
            reducer.fill = _timed(totals, "copy_in", reducer.fill)
            reducer.finish = _timed(totals, "wait", reducer.finish)
    opt = dj.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    rank = dist.get_rank()
    x = dj.tensor(np.ascontiguousarray(data.x[rank * batch:(rank + 1) * batch]))
    y = dj.tensor(data.y[rank * batch:(rank + 1) * batch])
    times, phases = [], []
    for _ in range(steps + 3):
        dist.barrier()
        totals.clear()
        start = time.perf_counter()
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        forward = time.perf_counter()
        loss.backward()
        backward = time.perf_counter()
        opt.step()
        end = time.perf_counter()
        times.append(end - start)
        phases.append([forward - start, backward - forward, totals.get("copy_in", 0.0),
                       totals.get("wait", 0.0), end - backward])
    mine = [_median(times[3:])] + [_median([p[i] for p in phases[3:]])
                                   for i in range(len(PHASES))]
    every = dist.all_gather(dj.tensor(mine, dtype=dj.float64)).numpy() * 1e3
    return {"batch": batch, "comm": comm, "ranks": dist.get_world_size(),
            "ms": float(every[:, 0].max()), "ms_per_rank": every[:, 0].tolist(),
            "phases_per_rank": [dict(zip(PHASES, row[1:].round(2).tolist())) for row in every]}


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


def _load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


RUNS = [(1, 1024, "none"), (1, 512, "none"), (2, 512, "none"), (2, 512, "single"),
        (2, 512, "hooks"), (2, 512, "overlap")]
WHAT = {"none": "not reduced", "single": "one bucket after backward (no overlap)",
        "hooks": "1 MB buckets, polled from the hooks only",
        "overlap": "1 MB buckets, helper thread (overlap)"}


def report(steps: int, repeat: int, bandwidth_too: bool = True) -> str:
    """Every measurement, as the markdown tables of docs/distributed.md. Each runs `repeat`
    times, interleaved with the others; the tables give the fastest run (other processes on
    the machine only ever slow a run down) and the median. Each run is logged to stderr
    with the 1-minute load average read just before it."""
    best_seconds: dict = {}
    results: dict = {key: [] for key in RUNS}
    moved: list = []
    for round_ in range(repeat):
        if bandwidth_too:
            for row in _run(["bandwidth"], 2):
                key = row["bytes"]
                best_seconds[key] = min(best_seconds.get(key, float("inf")), row["seconds"])
        moved.append(_run(["progress"], 2))
        for ranks, batch, comm in RUNS:
            load = _load()
            args = ["w4", "--batch", str(batch), "--comm", comm, "--steps", str(steps)]
            result = _run(args, ranks)
            results[ranks, batch, comm].append(result)
            print(f"round {round_}: {ranks} x {batch} {comm:8s} {result['ms']:7.1f} ms "
                  f"(load {load})", file=sys.stderr, flush=True)
    lines = []
    if bandwidth_too:
        lines += ["| message | time (µs) | bandwidth (GB/s) |", "|---:|---:|---:|"]
        for size, seconds in sorted(best_seconds.items()):
            label = f"{size >> 20} MB" if size >= 1 << 20 else f"{size >> 10} KB"
            lines.append(f"| {label} | {seconds * 1e6:,.0f} | {size / seconds / 1e9:.2f} |")
        lines.append("")
    lines += ["A 4 MB Iallreduce started before a 17 ms product, waited for after it (ms, median "
              "of the runs):", "", "| reduction | product | wait after it |", "|---|---:|---:|"]
    for mode in ("alone", "helper"):
        lines.append(f"| {mode} | {_median([m[mode]['compute_ms'] for m in moved]):.1f} | "
                     f"{_median([m[mode]['wait_ms'] for m in moved]):.2f} |")
    lines.append("")
    base = results[1, 512, "none"]
    base_best = min(r["ms"] for r in base)
    base_median = _median([r["ms"] for r in base])
    lines += ["| processes | rows per process | gradients | best (ms) | median (ms) | "
              "best / 1 x 512 |", "|---|---:|---|---:|---:|---:|"]
    for key in RUNS:
        ms = [r["ms"] for r in results[key]]
        lines.append(f"| {key[0]} | {key[1]} | {WHAT[key[2]]} | {min(ms):.1f} | "
                     f"{_median(ms):.1f} | {min(ms) / base_best:.2f} |")
    lines.append(f"\nmedian 2 x 512 overlap / median 1 x 512: "
                 f"{_median([r['ms'] for r in results[2, 512, 'overlap']]) / base_median:.2f}")
    lines += ["", "Phases of each configuration's fastest run (ms, median step; rank 0 / rank 1):",
              "", "| gradients | " + " | ".join(PHASES) + " |", "|---|" + "---:|" * len(PHASES)]
    for key in RUNS[1:]:
        fastest = min(results[key], key=lambda r: r["ms"])
        cells = [" / ".join(f"{rank[p]:.1f}" for rank in fastest["phases_per_rank"])
                 for p in PHASES]
        lines.append(f"| {key[0]} x {key[1]}, {WHAT[key[2]]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def link(reps: int = 50) -> dict:
    """Point-to-point latency (half a round trip of 8 bytes) and bandwidth (16 MB one way)
    between ranks 0 and 1, saved where `dj.Session(distribute="auto")` reads them."""
    import numpy as np

    import dongjing.distributed as dist
    from dongjing.distributed.cost_model import link_file

    dist.init()
    comm, rank = dist.get_communicator(), dist.get_rank()

    def round_trip(buf):
        comm.Barrier()
        start = time.perf_counter()
        if rank == 0:
            comm.Send(buf, dest=1)
            comm.Recv(buf, source=1)
        elif rank == 1:
            comm.Recv(buf, source=0)
            comm.Send(buf, dest=0)
        return time.perf_counter() - start

    small, big = np.zeros(1, np.float64), np.zeros(4 << 20, np.float32)
    latency = _median([round_trip(small) for _ in range(reps)]) / 2
    seconds = _median([round_trip(big) for _ in range(5)]) / 2
    figures = {"link_latency_s": latency, "link_bytes_per_s": big.nbytes / max(seconds - latency,
                                                                               1e-9)}
    figures = comm.bcast(figures, root=0)
    if rank == 0:
        path = link_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(figures))
        figures["saved_to"] = str(path)
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="?", default="report",
                        choices=("report", "bandwidth", "w4", "progress", "link", "plans"))
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--comm", choices=("none", *COMM), default="overlap")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--interval", type=float, default=None,
                        help="w4: the DDP helper thread's polling interval (s)")
    parser.add_argument("--repeat", type=int, default=3, help="report: runs of each, best")
    parser.add_argument("--no-bandwidth", action="store_true",
                        help="report: only the W4 steps")
    args = parser.parse_args(argv)
    if args.what == "report":
        print(report(args.steps, args.repeat, not args.no_bandwidth))
        return
    apply_thread_env(1)
    if args.what == "bandwidth":
        result = bandwidth()
    elif args.what == "progress":
        result = progress()
    elif args.what == "link":
        result = link()
    elif args.what == "plans":
        result = plans(args.steps)
    else:
        result = w4_step(args.batch, args.comm, args.steps, args.interval)
    import dongjing.distributed as dist

    if dist.get_rank() == 0:
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
