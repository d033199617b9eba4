"""One system of the GPU benchmark, in this process: per workload, probe it against the CPU
NumPy reference (``bench.check``), then time its synchronised steps. Every cell is a
JSON-ready record; a failure of one cell is recorded (traceback on stderr) and the next runs."""

from __future__ import annotations

import gc
import json
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.check import (
    TOLERANCE,
    Update,
    compare,
    describe_error,
    is_missing_api,
    momentum_problems,
    probe_runner,
)
from bench.gpu_systems import BUILDERS, Target, gpu_name, on_gpu, versions
from bench.systems import numpy_hand
from bench.systems.base import Unavailable
from bench.timing import Timing, time_repeat
from bench.workloads import WORKLOADS, MlpData, mlp_init

# Errors after which the CUDA context of this process is lost: the worker stops, and the
# parent starts a fresh one for the workloads left (matched in lower case).
STICKY_CUDA_ERRORS = ("illegal memory access", "illegal address", "illegal_address",
                      "unspecified launch failure", "launch_failed", "launchfailure",
                      "misaligned address", "misaligned_address")


@dataclass
class GpuTiming:
    """Warm-up, then ``repeats`` repeats of about ``repeat_s`` each; the median per step."""

    warmup_steps: int = 5
    warmup_s: float = 0.1
    repeat_s: float = 0.1
    repeats: int = 5
    repeat_limit_s: float = 1.0  # a repeat stops early past this
    cell_limit_s: float = 10.0  # warm-up and repeats of one cell stop early past this

    @classmethod
    def quick(cls) -> GpuTiming:
        return cls(warmup_steps=3, warmup_s=0.03, repeat_s=0.03, repeats=3, repeat_limit_s=0.3,
                   cell_limit_s=3.0)


def workload_data(key: str, tiny: bool) -> tuple[Any, str]:
    """The workload's data and a note: W1 without scikit-learn is a standard normal batch of
    the digits' shape (64 features, 10 classes) with the same init (timing is unaffected)."""
    wl = WORKLOADS[key]
    try:
        return wl.data(tiny), ""
    except ImportError as e:
        if key != "W1":
            raise
        sizes = dict(wl.tiny if tiny else wl.sizes)
        batch, hidden = sizes.get("batch", 64), sizes.get("hidden", 256)
        rng = np.random.default_rng(1)
        x = rng.standard_normal((batch, 64)).astype(np.float32)
        y = rng.integers(0, 10, batch).astype(np.int64)
        data = MlpData(x, y, mlp_init([64, hidden, hidden, 10], 0))
        return data, f"synthetic batch of the digits' shape ({e})"


def time_steps(step: Callable[[], object], cfg: GpuTiming) -> Timing:
    """Warm up (at least ``warmup_steps`` and ``warmup_s``, at most a third of the cell's
    limit), pick ``inner`` so that a repeat lasts ``repeat_s``, then time the repeats."""
    start = time.perf_counter()
    times: list[float] = []
    while len(times) < cfg.warmup_steps or time.perf_counter() - start < cfg.warmup_s:
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() - start > cfg.cell_limit_s / 3:
            break
    settled = sorted(times[len(times) // 2:])
    per_step = max(settled[len(settled) // 2], 1e-9)
    timing = Timing(max(1, round(cfg.repeat_s / per_step)))
    for _ in range(cfg.repeats):
        seconds, done = time_repeat(step, timing.inner, cfg.repeat_limit_s)
        timing.per_step_s.append(seconds)
        timing.cut += done < timing.inner
        if time.perf_counter() - start > cfg.cell_limit_s:
            break
    return timing


def placement(runner: Any) -> str:
    """Where the runner's arrays live, or why that could not be told."""
    try:
        return runner.placement()
    except Exception as e:  # only informative: never fails a cell
        return f"unknown ({describe_error(e)})"


def check(runner_probes: list[Any], refs: list[Any], data: Any) -> tuple[list[str], float]:
    """Disagreements with the reference probes (and, for training, with momentum SGD)."""
    problems, worst = compare(runner_probes, refs, TOLERANCE)
    if isinstance(data, MlpData):
        update = Update(dict(zip(data.param_names, data.params)), data.lr, data.momentum)
        problems += momentum_problems(runner_probes, update)
    return problems, worst


def cuda_graph_note(runner: Any) -> str:
    """For a dongjing static runner on a GPU: whether its timed program replayed a CUDA graph
    (and how often), or why not; "" for other systems."""
    inner = getattr(runner, "runner", runner)  # a Synced wrapper's own runner
    sess = getattr(inner, "sess", None)
    notes = []
    for run in getattr(sess, "_runs", {}).values():
        graphs = getattr(run.program, "graphs", None)
        if graphs is None:
            continue
        notes.append(f"CUDA graph replayed {graphs.replays}x" if graphs.replays else
                     f"no CUDA graph ({graphs.reason or 'not captured yet'})")
    return "; ".join(dict.fromkeys(notes))


def run_cell(name: str, key: str, target: Target, cfg: GpuTiming,
             tiny: bool = False) -> dict[str, Any]:
    """Check, then time, system ``name`` on workload ``key``: a record whose ``status`` is
    "ok", "wrong", "unavailable" or "error"."""
    wl = WORKLOADS[key]
    record: dict[str, Any] = {"system": name, "workload": key, "status": "error"}
    try:
        data, record["data_note"] = workload_data(key, tiny)
        _, refs = probe_runner(lambda: numpy_hand.build(wl.kind, data))
        t0 = time.perf_counter()
        runner, probes = probe_runner(lambda: BUILDERS[name](target, wl.kind, data), len(refs))
        record["first_call_s"] = time.perf_counter() - t0  # build and the probed steps
        record["note"] = runner.note
        record["placement"] = placement(runner)
        problems, worst = check(probes, refs, data)
        record.update(max_error=worst, problems=problems)
        if problems:
            record["status"] = "wrong"
            return record
        gc.freeze()  # what lives now is left out of the gc.collect() before each repeat
        try:
            timing = time_steps(runner.step, cfg)
        finally:
            gc.unfreeze()
        record.update(status="ok", median_us=timing.median_us, min_us=timing.min_us,
                      max_us=timing.max_us, inner=timing.inner, cut_repeats=timing.cut,
                      repeats_us=[s * 1e6 for s in timing.per_step_s])
        replay = cuda_graph_note(runner)
        if replay:
            record["note"] = f"{record['note']}; {replay}" if record["note"] else replay
        if target.gpu and not on_gpu(record["placement"]):
            record["problems"] = [f"its arrays are on {record['placement']}, not the GPU"]
    except Exception as e:  # recorded, not raised: the next cell still runs
        missing = isinstance(e, Unavailable) or is_missing_api(e)
        record.update(status="unavailable" if missing else "error",
                      problems=[str(e) if isinstance(e, Unavailable) else describe_error(e)])
        if not isinstance(e, Unavailable):
            print(f"--- {name} {key}: {describe_error(e)}", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
    return record


def sticky(record: dict[str, Any]) -> bool:
    """Whether a failed cell left this process's CUDA context unusable."""
    text = " ".join(record.get("problems", [])).lower()
    return record["status"] == "error" and any(s in text for s in STICKY_CUDA_ERRORS)


def run_system(name: str, keys: list[str], target: Target, cfg: GpuTiming, tiny: bool = False,
               emit: Callable[[dict[str, Any]], None] = print) -> list[dict[str, Any]]:
    """Every workload of ``keys`` for one system; ``emit`` gets each record as it is made
    (a "start" record before each cell). Stops after a sticky CUDA error."""
    records = []
    for key in keys:
        emit({"event": "start", "system": name, "workload": key, "time": time.time()})
        record = run_cell(name, key, target, cfg, tiny)
        record.update(event="cell", versions=versions(name), gpu=gpu_name(target))
        emit(record)
        records.append(record)
        if sticky(record):
            break
    return records


def main(name: str, keys: list[str], target: str, out: str, quick: bool, tiny: bool) -> int:
    """The worker process: one system, records appended to ``out`` as JSON lines; exit status
    3 after a sticky CUDA error (the parent then restarts a fresh process)."""
    cfg = GpuTiming.quick() if quick else GpuTiming()
    with open(out, "a") as f:
        def emit(record: dict[str, Any]) -> None:
            f.write(json.dumps(record) + "\n")
            f.flush()
            if record.get("event") == "cell":
                status = record["status"]
                shown = f"{record['median_us']:,.1f} µs" if status == "ok" else status
                print(f"  {record['workload']} {name:<9} {shown}  "
                      + "; ".join(record.get("problems", [])[:2]), flush=True)

        records = run_system(name, keys, Target(target), cfg, tiny, emit)
    return 3 if records and sticky(records[-1]) else 0
