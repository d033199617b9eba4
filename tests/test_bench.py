"""The benchmark harness: its NumPy reference is right (finite differences), every available
system agrees with it at tiny sizes, and a wrong system is caught before it is timed."""

from __future__ import annotations

import dataclasses
import json
import mmap
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from bench import cli, report, timing
from bench.check import Update, check_system, compare, probe_runner
from bench.systems import REFERENCE, System, all_systems, numpy_hand
from bench.systems.base import Probe
from bench.timing import TimingConfig, measure
from bench.worker import check_all, run_workload
from bench.workloads import (
    WORKLOADS,
    MlpData,
    OpData,
    RnnData,
    Seq2SeqData,
    TransformerData,
)

ROOT = Path(__file__).resolve().parent.parent
KEYS = sorted(WORKLOADS)
NO_GC = SimpleNamespace(collect=lambda: 0, freeze=lambda: None, unfreeze=lambda: None)


def named_arrays(data: object) -> dict[str, np.ndarray]:
    """The differentiated arrays of a workload's data, by gradient name."""
    if isinstance(data, (MlpData, RnnData, Seq2SeqData, TransformerData)):
        return dict(zip(data.param_names, data.params))
    if isinstance(data, OpData):
        return {"x": data.x, "y": data.y}
    return {"x": data.x}


def as_float64(data: object) -> object:
    fields = {}
    for f in dataclasses.fields(data):
        v = getattr(data, f.name)
        if isinstance(v, np.ndarray) and v.dtype == np.float32:
            v = v.astype(np.float64)
        elif isinstance(v, list) and all(isinstance(p, np.ndarray) for p in v):
            v = [p.astype(np.float64) for p in v]
        fields[f.name] = v
    return type(data)(**fields)


@pytest.mark.parametrize("key", KEYS)
def test_numpy_reference_matches_finite_differences(key: str) -> None:
    wl = WORKLOADS[key]
    data = as_float64(wl.data(tiny=True))
    grads = numpy_hand.build(wl.kind, data).probe().grads
    rng = np.random.default_rng(0)
    eps = 1e-6
    for name, arr in named_arrays(data).items():
        for flat in rng.choice(arr.size, size=min(arr.size, 8), replace=False):
            idx = np.unravel_index(flat, arr.shape)
            old = arr[idx]
            arr[idx] = old + eps
            up = numpy_hand.build(wl.kind, data).probe().loss
            arr[idx] = old - eps
            down = numpy_hand.build(wl.kind, data).probe().loss
            arr[idx] = old
            fd = (up - down) / (2 * eps)
            assert grads[name][idx] == pytest.approx(fd, rel=1e-5, abs=1e-8), (name, idx)


@pytest.mark.parametrize("key", KEYS)
def test_available_systems_agree_at_tiny_sizes(key: str) -> None:
    wl = WORKLOADS[key]
    checks = check_all(wl, wl.data(tiny=True), all_systems())
    assert checks[REFERENCE].status == "ok"
    bad = {n: (c.status, c.problems) for n, c in checks.items() if c.status in ("wrong", "error")}
    assert not bad


class _Wrong:
    """Wraps a runner and perturbs one of its answers."""

    def __init__(self, inner: object, what: str) -> None:
        self.inner, self.what, self.note = inner, what, "deliberately wrong"

    def step(self) -> None:
        self.inner.step()

    def probe(self) -> Probe:
        p = self.inner.probe()
        if self.what == "loss":
            p.loss *= 1.001
        elif self.what == "grad":
            name = next(iter(p.grads))
            p.grads[name] = p.grads[name] * 1.01
        elif self.what == "shape":
            name = next(iter(p.grads))
            p.grads[name] = p.grads[name].ravel()[:-1]
        else:
            name = next(iter(p.params))
            p.params[name] = p.params[name] + 1e-3
        return p


@pytest.mark.parametrize("what", ["loss", "grad", "shape", "param"])
def test_wrong_system_is_caught(what: str) -> None:
    data = WORKLOADS["W1"].data(tiny=True)
    _, refs = probe_runner(lambda: numpy_hand.build("mlp", data))
    result = check_system(lambda: _Wrong(numpy_hand.build("mlp", data), what), refs)
    assert result.status == "wrong"
    assert result.problems


@pytest.mark.parametrize("attr, value", [("mom", 0.0), ("mom", 0.5), ("lr", 0.0501)])
def test_wrong_update_rule_is_caught(attr: str, value: float) -> None:
    data = WORKLOADS["W1"].data(tiny=True)
    update = Update(dict(zip(data.param_names, data.params)), data.lr, data.momentum)
    _, refs = probe_runner(lambda: numpy_hand.build("mlp", data))

    def wrong() -> numpy_hand.Mlp:
        runner = numpy_hand.build("mlp", data)
        setattr(runner, attr, value)
        return runner

    assert check_system(lambda: numpy_hand.build("mlp", data), refs, update=update).status == "ok"
    result = check_system(wrong, refs, update=update)
    assert result.status == "wrong", result


def test_missing_api_is_skipped_and_crash_is_error() -> None:
    data = WORKLOADS["W2"].data(tiny=True)
    _, refs = probe_runner(lambda: numpy_hand.build("op", data))

    def missing() -> None:
        raise NotImplementedError("no Session yet")

    def crash() -> None:
        raise ValueError("boom")

    assert check_system(missing, refs).status == "skipped"
    assert check_system(crash, refs).status == "error"
    assert compare(refs, refs)[0] == []


def test_wrong_system_is_never_timed() -> None:
    wl = WORKLOADS["W2"]

    def wrong_build(kind: str, data: object) -> _Wrong:
        return _Wrong(numpy_hand.build(kind, data), "grad")

    systems = [System(REFERENCE, numpy_hand.build), System("wrong", wrong_build)]
    cfg = TimingConfig(warmup_steps=1, warmup_s=0.0, repeat_s=0.001, repeats=2)
    run = run_workload(wl, systems, cfg, tiny=True, log=lambda m: None)
    by = {e["system"]: e for e in run["systems"]}
    assert by["wrong"]["status"] == "wrong" and "median_us" not in by["wrong"]
    assert by[REFERENCE]["status"] == "ok" and len(by[REFERENCE]["repeats_us"]) == 2
    run["threads"] = 2
    text = report.markdown({"runs": [run], "machine": {}, "timing": vars(cfg)})
    assert "**WRONG**" in text and "W2 op-overhead" in text
    json.dumps(run)


def test_measure_interleaves_and_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timing, "gc", NO_GC)  # slow, not what is tested
    order: list[str] = []
    steps = {"a": lambda: order.append("a"), "b": lambda: order.append("b")}
    cfg = TimingConfig(warmup_steps=2, warmup_s=0.0, repeat_s=1e-9, repeats=3)
    timings = measure(steps, cfg)
    assert all(t.inner == 1 and len(t.per_step_s) == 3 for t in timings.values())
    assert order[-6:] == ["a", "b"] * 3
    assert timings["a"].min_us <= timings["a"].median_us <= timings["a"].max_us


def _fresh_pages(size: int) -> mmap.mmap:
    """`size` bytes of newly mapped, touched memory (a malloc'd block may reuse resident memory
    that earlier tests freed, and then the process does not grow)."""
    block = mmap.mmap(-1, size)
    for offset in range(0, size, mmap.PAGESIZE):
        block[offset] = 1
    return block


def test_leaking_system_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timing, "gc", NO_GC)
    hoard: list[bytes] = []
    cfg = TimingConfig(warmup_steps=1, warmup_s=0.0, repeat_s=1e-9, repeats=3,
                       memory_growth_mb=5)
    t = measure({"leaky": lambda: hoard.append(_fresh_pages(8 << 20))}, cfg)["leaky"]
    assert "memory grew" in t.dropped and len(t.per_step_s) < 3


def test_slow_repeat_is_cut_short() -> None:
    per_step, done = timing.time_repeat(lambda: time.sleep(0.002), inner=100, limit_s=0.005)
    assert done < 100 and per_step >= 0.002


def test_cli_plan_and_no_numpy_before_threads() -> None:
    args = cli.parse_args(["--workloads", "w1,W3", "--quick"])
    assert cli.plan(args) == [(2, ["W1", "W3"]), (1, ["W1"])]
    assert cli.plan(cli.parse_args(["--workloads", "W2", "--threads", "1,2"])) == [
        (1, ["W2"]), (2, ["W2"])]
    code = "import sys, bench.__main__; assert 'numpy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_gemm_floor_is_timed_unchecked_with_fresh_columns() -> None:
    from bench.systems import gemm_floor

    wl = WORKLOADS["W4"]
    systems = [System(REFERENCE, numpy_hand.build),
               System("gemm-floor", gemm_floor.build, floor=True)]
    cfg = TimingConfig(warmup_steps=1, warmup_s=0.0, repeat_s=0.001, repeats=2)
    run = run_workload(wl, systems, cfg, tiny=True, log=lambda m: None, fresh=True)
    by = {e["system"]: e for e in run["systems"]}
    floor = by["gemm-floor"]
    assert floor["status"] == "floor" and len(floor["repeats_us"]) == 2
    for e in by.values():  # measured in a fresh process each
        assert e["first_call_s"] > 0 and "fresh_error" not in e
        assert e["rss_growth_mb"] is None or e["rss_growth_mb"] >= 0
    run["threads"] = 2
    text = report.markdown({"runs": [run], "machine": {}, "timing": vars(cfg)})
    assert "not checked (a floor)" in text and "peak RSS" in text
    # a floor exists only for MLPs, and it is never mistaken for an answer
    assert check_all(WORKLOADS["W2"], WORKLOADS["W2"].data(tiny=True), systems)[
        "gemm-floor"].status == "skipped"


def test_gemm_floor_does_the_steps_gemms() -> None:
    from bench.systems import gemm_floor

    data = WORKLOADS["W4"].data(tiny=True)
    runner = gemm_floor.build("mlp", data)
    rng = np.random.default_rng(1)
    for d in runner.deltas:
        d[...] = rng.standard_normal(d.shape)
    runner.step()
    W1, W2 = data.params[0], data.params[2]
    h1 = data.x @ W1
    np.testing.assert_allclose(runner.acts[1], h1 @ W2, rtol=1e-5)
    np.testing.assert_allclose(runner.grads[0], data.x.T @ runner.deltas[0], rtol=1e-5)


def test_fresh_first_call_of_a_compiled_system() -> None:
    from bench import fresh

    out = fresh.measure("W7", "dj-static-O2", tiny=True)
    assert out["first_call_s"] > 0
    assert fresh.run_fresh("W99", "numpy", tiny=True)["error"].startswith("fresh first call")


def test_main_table_runs_in_the_default_environment_and_tuned_is_labelled() -> None:
    from bench.threads import TUNED_VARS, thread_env

    base = {"DONGJING_KEEP_FREED_MEMORY": "1", "OPENBLAS_THREAD_TIMEOUT": "20", "HOME": "/x"}
    default = thread_env(2, base)
    assert not set(TUNED_VARS) & set(default) and default["OMP_NUM_THREADS"] == "2"
    assert default["HOME"] == "/x"
    assert {k: thread_env(1, base, tuned=True)[k] for k in TUNED_VARS} == TUNED_VARS
    args = cli.parse_args(["--tuned", "--workloads", "W2"])
    assert args.tuned and not args.tuned_env

    def run(env, us):
        return {"workload": "W2", "name": "op-overhead", "threads": 2, "env": env,
                "systems": [{"system": "numpy", "status": "ok", "median_us": us}]}

    results = {"runs": [run("default", 30.0), run("tuned", 20.0)]}
    text = report.markdown(results)
    main, tuned = text.split("## Tuned settings")
    assert "| W2 op-overhead | 2 | 30 |" in main.split("First call")[0]
    assert "| W2 op-overhead | 2 | 20 |" in tuned.split("###")[0]
    assert "OPENBLAS_THREAD_TIMEOUT=20" in tuned and "2 thread(s), tuned settings" in text


def test_tf1_cnn_step_runs_in_compat_v1(monkeypatch) -> None:
    from bench import tf1_cnn

    monkeypatch.setattr(tf1_cnn, "BATCH", 2)
    monkeypatch.setattr(tf1_cnn, "STEPS", 1)
    monkeypatch.setattr(tf1_cnn, "REPEATS", 1)
    out = tf1_cnn.build_and_time("dongjing", 0, 1)
    assert out["median_ms"] > 0 and out["min_ms"] <= out["median_ms"] <= out["max_ms"]


def test_w5_written_the_public_api_ways_gets_the_bench_builders_program() -> None:
    from bench import program_check

    rows = program_check.check(steps=6)
    assert [r["form"] for r in rows][0] == "bench builder" and len(rows) == 5
    for row in rows:
        assert row["same_program"], row
        assert row["max_error"] < 1e-4, row
