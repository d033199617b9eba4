"""One benchmark process at one thread count: check every system, then time those that agree."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from typing import Any

from bench.check import (
    TOLERANCE,
    CheckResult,
    Update,
    check_system,
    describe_error,
    is_missing_api,
    probe_runner,
)
from bench.fresh import run_fresh
from bench.machine import describe, load_average
from bench.systems import REFERENCE, System, all_systems
from bench.timing import TimingConfig, measure
from bench.workloads import WORKLOADS, MlpData, Workload


def select_systems(names: list[str] | None) -> list[System]:
    """All systems, or those named (the reference is always kept, first)."""
    systems = all_systems()
    if not names:
        return systems
    return [s for s in systems if s.name == REFERENCE or s.name in names]


def check_all(wl: Workload, data: Any, systems: list[System], tol: float = TOLERANCE,
              log: Callable[[str], None] | None = None) -> dict[str, CheckResult]:
    """Probe the reference, then check every system against it on the same data."""
    ref = next(s for s in systems if s.name == REFERENCE)
    _, refs = probe_runner(lambda: ref.build(wl.kind, data))
    update = None
    if isinstance(data, MlpData):
        update = Update(dict(zip(data.param_names, data.params)), data.lr, data.momentum)
    results = {}
    for s in systems:
        t0 = time.perf_counter()
        if s.floor:
            results[s.name] = check_floor(lambda s=s: s.build(wl.kind, data))
            continue
        c = results[s.name] = check_system(lambda s=s: s.build(wl.kind, data), refs, tol, update)
        if log:
            log(f"  {wl.key} {s.name:<13} check: {c.status} ({time.perf_counter() - t0:.1f} s) "
                f"{c.note} " + "; ".join(c.problems[:3]))
    return results


def check_floor(build: Callable[[], Any]) -> CheckResult:
    """A floor (part of the work, no answer) is not checked: only built, or skipped."""
    try:
        runner = build()
    except Exception as e:  # reported, not raised
        return CheckResult("skipped" if is_missing_api(e) else "error", [describe_error(e)])
    return CheckResult("floor", [], getattr(runner, "note", ""))


def fresh_first_calls(wl: Workload, systems: list[System], entries: dict[str, dict[str, Any]],
                      tiny: bool, log: Callable[[str], None]) -> None:
    """Each timed system's first call and peak RSS growth in a fresh process (compiled ones
    twice: with an empty kernel cache, then with the kernels that run cached)."""
    for s in systems:
        e = entries[s.name]
        if "median_us" not in e:
            continue
        with tempfile.TemporaryDirectory(prefix="dj-cache-") as cache:
            cold = run_fresh(wl.key, s.name, tiny, cache)
            warm = run_fresh(wl.key, s.name, tiny, cache) if s.compiled else {}
        if "error" in cold:
            e["fresh_error"] = cold["error"]
        else:
            e["in_process_first_call_s"] = e.get("first_call_s")
            e["first_call_s"] = cold["first_call_s"]
            e["rss_growth_mb"] = cold["rss_growth_mb"]
            e["step_peak_mb"] = cold.get("step_peak_mb")
        if "first_call_s" in warm:
            e["first_call_cached_s"] = warm["first_call_s"]
        log(f"  {wl.key} {s.name:<13} fresh first call: {cold} {warm}")


def run_workload(wl: Workload, systems: list[System], cfg: TimingConfig, tiny: bool = False,
                 log: Callable[[str], None] = print, fresh: bool = False) -> dict[str, Any]:
    """Check, then time, every system on one workload; with ``fresh``, then measure each
    one's first call and peak memory in a fresh process. A JSON-ready record."""
    load_before = load_average()
    data = wl.data(tiny)
    checks = check_all(wl, data, systems, log=log)
    entries: dict[str, dict[str, Any]] = {}
    steps = {}
    for s in systems:
        c = checks[s.name]
        entries[s.name] = {"system": s.name, "status": c.status, "note": c.note,
                           "problems": c.problems, "max_error": c.max_error,
                           "compiled": s.compiled}
        if c.status not in ("ok", "floor"):
            continue
        try:  # the timed runner is a fresh one: its build and first step are the first call
            t0 = time.perf_counter()
            runner = s.build(wl.kind, data)
            runner.step()
            entries[s.name]["first_call_s"] = time.perf_counter() - t0
            steps[s.name] = runner.step
        except Exception as e:  # reported, not raised: other systems still run
            entries[s.name].update(status="error", problems=[describe_error(e)])
    timings = measure(steps, cfg, progress=lambda m: log(f"  {wl.key} timing {m}"))
    for name, t in timings.items():
        if t.dropped:
            entries[name].update(status="error", problems=[t.dropped])
            continue
        entries[name].update(median_us=t.median_us, min_us=t.min_us, max_us=t.max_us,
                             inner=t.inner, cut_repeats=t.cut,
                             repeats_us=[x * 1e6 for x in t.per_step_s])
    if fresh:
        fresh_first_calls(wl, systems, entries, tiny, log)
    return {"workload": wl.key, "name": wl.name, "sizes": wl.tiny if tiny else wl.sizes,
            "load": [load_before, load_average()], "systems": list(entries.values())}


def main(workloads: list[str], threads: int, out: str, quick: bool,
         systems: list[str] | None, fresh: bool = True, tuned: bool = False) -> None:
    """Run ``workloads`` here (thread variables already set) and write a JSON record; each
    run says whether it ran in the default environment or with the tuned settings."""
    cfg = TimingConfig.quick() if quick else TimingConfig()
    machine = describe()  # before any system loads another BLAS
    chosen = select_systems(systems)
    runs = []
    start = time.perf_counter()

    def log(message: str) -> None:
        print(f"{time.perf_counter() - start:6.1f}s {message}", flush=True)

    for key in workloads:
        log(f"[{threads} thread(s)] {key} {WORKLOADS[key].name}")
        run = run_workload(WORKLOADS[key], chosen, cfg, log=log, fresh=fresh)
        run["threads"] = threads
        run["env"] = "tuned" if tuned else "default"
        runs.append(run)
    record = {"machine": machine, "timing": vars(cfg), "runs": runs}
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
