"""Command-line options of ``python -m bench`` (standard library only: NumPy is not imported
before the thread variables are set)."""

from __future__ import annotations

import argparse
from pathlib import Path

ALL_WORKLOADS = ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9"]
GPU_WORKLOADS = ["W1", "W2", "W3", "W4", "W5", "W6", "W7"]  # W8 and W9 on the CPU only
DEFAULT_THREADS = 2
SINGLE_THREAD_EXTRA = ["W1"]  # also measured with 1 thread by default
# --device: the GPU benchmark (bench/gpu.py); "cpu-as-gpu" runs its harness on CPU stand-ins
DEVICES = ("cuda", "cpu-as-gpu")


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _workloads(text: str) -> list[str]:
    keys = [k.upper() for k in _csv(text)]
    bad = [k for k in keys if k not in ALL_WORKLOADS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown workload(s) {bad}; choose from {ALL_WORKLOADS}")
    return keys


def _device(text: str) -> str:
    if text not in DEVICES:
        raise argparse.ArgumentTypeError("--device wants cuda")
    return text


def _threads(text: str) -> list[int]:
    try:
        counts = [int(part) for part in _csv(text)]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"--threads wants integers like 2 or 1,2: {e}") from e
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("--threads wants positive integers")
    return counts


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Time workloads W1-W9 in every available system (shared/workloads.md).",
    )
    p.add_argument("--workloads", type=_workloads, default=None,
                   help="comma-separated subset, e.g. W1,W3 (default: all; with --device "
                   "--quick: W1-W5)")
    p.add_argument("--threads", type=_threads, default=None,
                   help="thread counts, e.g. 2 or 1,2 (default: 2, and W1 also with 1)")
    p.add_argument("--systems", type=_csv, default=None,
                   help="only these systems (NumPy is always run), e.g. dj-eager,torch; with "
                   "--device: of dj-eager, dj-static, dj-jit, torch, jax-jit, cupy")
    p.add_argument("--device", type=_device, default=None,
                   help="cuda: time the workloads on one GPU instead (bench/gpu.py), results "
                   "in gpu_results.md/.json")
    p.add_argument("--quick", action="store_true", help="fewer, shorter repeats (a smoke run)")
    p.add_argument("--tuned", action="store_true",
                   help="also time every system with the tuned settings (bench/threads.py "
                   "TUNED_VARS) in a second, labelled table; the main table always runs in "
                   "the default environment")
    p.add_argument("--tuned-env", action="store_true", help=argparse.SUPPRESS)  # worker side
    p.add_argument("--no-fresh", dest="fresh", action="store_false",
                   help="skip the first-call and peak-memory runs in fresh processes")
    p.add_argument("--accuracy", action="store_true",
                   help="run W1's 20-epoch accuracy run instead of timing")
    p.add_argument("--program-check", action="store_true",
                   help="check that W5 written the obvious public-API ways (operand orders, "
                   "dj.matmul, F.linear, nn.RNNCell) compiles at O2 to the bench builder's "
                   "program (bench/program_check.py); exits 1 on a mismatch")
    p.add_argument("--out-dir", type=Path, default=Path(__file__).resolve().parent,
                   help="where results.json/.md/.png go (default: bench/)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--gpu-worker", default=None, help=argparse.SUPPRESS)  # one GPU system
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # shrunken sizes
    p.add_argument("--out", default=None, help=argparse.SUPPRESS)
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return parser().parse_args(argv)


def plan(args: argparse.Namespace) -> list[tuple[int, list[str]]]:
    """(thread count, workloads) for each worker process to run."""
    keys = list(args.workloads or ALL_WORKLOADS)
    if args.threads:
        return [(n, keys) for n in args.threads]
    groups = [(DEFAULT_THREADS, keys)]
    extra = [k for k in keys if k in SINGLE_THREAD_EXTRA]
    if extra:
        groups.append((1, extra))
    return groups
