"""The GPU benchmark's harness (``python -m bench --device cuda``), run on its CPU stand-ins
("cpu-as-gpu") at tiny sizes: every available system is checked and timed; a system without
its GPU library is reported unavailable with the reason; a worker that crashes, hangs or loses
its CUDA context costs only its cell."""

from __future__ import annotations

import importlib.util
import json
import math
import operator
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from wrapped_backend import WArray, _Namespace, unwrap

from bench import gpu, gpu_report
from bench.check import compare, probe_runner
from bench.cli import GPU_WORKLOADS
from bench.gpu_run import GpuTiming, run_cell, run_system, sticky
from bench.gpu_systems import NAMES, Target, first_array
from bench.systems import dj_static, numpy_hand
from bench.systems.base import Unavailable
from bench.workloads import WORKLOADS

ROOT = Path(__file__).resolve().parent.parent
KEYS = sorted(GPU_WORKLOADS)  # W8 and W9 are timed on the CPU only
FAST = GpuTiming(warmup_steps=1, warmup_s=0.0, repeat_s=0.001, repeats=2, repeat_limit_s=0.1,
                 cell_limit_s=1.0)
# Not written for these (the table says so): JAX has no convnet, the CuPy step no W7 on a GPU.
NOT_WRITTEN = {("jax-jit", "W7")}


@pytest.mark.parametrize("name", NAMES)
def test_every_available_system_is_checked_and_timed(name: str) -> None:
    records = run_system(name, KEYS, Target("cpu-as-gpu"), FAST, tiny=True,
                         emit=lambda r: None)
    assert [r["workload"] for r in records] == KEYS
    for r in records:
        if (name, r["workload"]) in NOT_WRITTEN or r["status"] == "unavailable":
            assert r["status"] == "unavailable" and r["problems"], r
            continue
        assert r["status"] == "ok", r
        assert not r["problems"] and r["max_error"] <= 1e-4
        assert math.isfinite(r["median_us"]) and r["median_us"] > 0
        assert len(r["repeats_us"]) == FAST.repeats and r["first_call_s"] > 0
        assert r["placement"]
    # the NumPy-like step and dongjing eager are there wherever the tests run (PyTorch where
    # it is installed: a fresh CI venv has none)
    present = name in ("cupy", "dj-eager") or (
        name == "torch" and importlib.util.find_spec("torch") is not None)
    if present:
        assert all(r["status"] == "ok" for r in records), records


def test_without_a_gpu_each_system_says_why() -> None:
    target = Target("cuda")
    for name in NAMES:
        r = run_cell(name, "W2", target, FAST, tiny=True)
        if r["status"] == "ok":  # a machine with a GPU
            continue
        assert r["status"] == "unavailable", r
        assert r["problems"][0]


class DeviceArray(WArray):
    """A stand-in for a CuPy array: NumPy's functions refuse it (no implicit host copy), its
    in-place operators write into it, and ``get()`` copies it to the host."""

    __slots__ = ()

    def get(self) -> np.ndarray:
        return self.a.copy()


for _name in ("iadd", "isub", "imul", "itruediv"):
    setattr(DeviceArray, f"__{_name}__", (lambda op: lambda self, other: (
        op(self.a, unwrap(other)), self)[1])(getattr(operator, _name)))


@pytest.mark.parametrize("key", [k for k in KEYS if WORKLOADS[k].kind != "conv"])
def test_hand_written_step_reaches_its_arrays_only_through_xp(key: str) -> None:
    """The "cupy" system is numpy_hand with ``xp = cupy``: with an array module whose arrays
    NumPy refuses, every step still gives the NumPy answers."""
    wl = WORKLOADS[key]
    data = wl.data(tiny=True)
    _, refs = probe_runner(lambda: numpy_hand.build(wl.kind, data))
    runner, probes = probe_runner(lambda: numpy_hand.build(wl.kind, data,
                                                           xp=_Namespace(np, DeviceArray)))
    runner.step()
    assert compare(probes, refs, tol=1e-6)[0] == []
    assert isinstance(first_array(runner), DeviceArray)


def test_a_static_variable_without_device_support_is_unavailable_on_the_gpu() -> None:
    class OldVariable:
        def __init__(self, value: object, name: str | None = None,
                     trainable: bool = True) -> None:
            self.value = value

    dj = SimpleNamespace(Variable=OldVariable)
    value = np.zeros(3, np.float32)
    assert dj_static.variable(dj, value, "cpu").value is value  # the default place anyway
    with pytest.raises(Unavailable, match="device="):
        dj_static.variable(dj, value, "cuda")


def test_command_line_writes_the_table_last(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "bench", "--device", "cpu-as-gpu", "--tiny", "--quick",
           "--systems", "cupy,dj-eager", "--workloads", "W1,W3", "--out-dir", str(tmp_path)]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    results = json.loads((tmp_path / "gpu_results.json").read_text())
    assert results["systems"] == ["dj-eager", "cupy"] and results["workloads"] == ["W1", "W3"]
    assert {(c["workload"], c["system"], c["status"]) for c in results["cells"]} == {
        (k, s, "ok") for k in ("W1", "W3") for s in ("dj-eager", "cupy")}
    text = (tmp_path / "gpu_results.md").read_text()
    last = text.strip().splitlines()[-1]
    assert last.startswith("| W3 elementwise-chain |") and out.strip().endswith(last)
    assert "| workload | dj-eager | cupy |" in text


FAKE_WORKER = r"""
import json, os, signal, sys, time
out, keys = sys.argv[1], sys.argv[2].split(",")
with open(out, "a") as f:
    def emit(r):
        f.write(json.dumps(r) + "\n"); f.flush()
    for key in keys:
        emit({"event": "start", "system": "fake", "workload": key, "time": time.time()})
        if key == "W2":  # a lost CUDA context: recorded, then exit 3
            emit({"event": "cell", "system": "fake", "workload": key, "status": "error",
                  "problems": ["an illegal memory access was encountered"]})
            sys.exit(3)
        if key == "W3":
            os.kill(os.getpid(), signal.SIGSEGV)
        if key == "W4":
            time.sleep(60)
        emit({"event": "cell", "system": "fake", "workload": key, "status": "ok",
              "median_us": 1.0, "problems": []})
"""


def test_crashes_and_hangs_cost_only_their_cell(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    monkeypatch.setattr(gpu, "worker_command", lambda name, keys, args, out: [
        sys.executable, "-c", FAKE_WORKER, str(out), ",".join(keys)])
    cells = gpu.run_system("fake", ["W1", "W2", "W3", "W4", "W5"], SimpleNamespace(), tmp_path,
                           dict(os.environ), cell_timeout_s=1.0)
    by = {c["workload"]: c for c in cells}
    assert [c["workload"] for c in cells] == ["W1", "W2", "W3", "W4", "W5"]
    assert by["W1"]["status"] == by["W5"]["status"] == "ok"
    assert "illegal memory access" in by["W2"]["problems"][0]
    assert "SIGSEGV" in by["W3"]["problems"][0]
    assert "timed out" in by["W4"]["problems"][0]
    # a system that runs out of its budget: the cell it is in is stopped, the rest not run
    (tmp_path / "b").mkdir()
    cells = gpu.run_system("fake", ["W1", "W4", "W5"], SimpleNamespace(), tmp_path / "b",
                           dict(os.environ), cell_timeout_s=30.0, budget_s=1.5)
    assert [c["status"] for c in cells] == ["ok", "error", "error"]
    assert "budget" in cells[1]["problems"][0] and "not run" in cells[2]["problems"][0]


def test_lost_cuda_contexts_are_recognised() -> None:
    for message in ("CUDARuntimeError: cudaErrorIllegalAddress: an illegal memory access was "
                    "encountered", "XlaRuntimeError: INTERNAL: CUDA_ERROR_ILLEGAL_ADDRESS",
                    "RuntimeError: CUDA error: unspecified launch failure"):
        assert sticky({"status": "error", "problems": [message]})
    assert not sticky({"status": "error", "problems": ["ValueError: shapes (2,3) (4,)"]})
    assert not sticky({"status": "unavailable", "problems": ["illegal memory access"]})


def test_report_gives_the_reason_of_an_unavailable_system() -> None:
    results = {
        "target": "cuda", "systems": ["torch", "cupy"], "workloads": ["W1"],
        "cells": [
            {"system": "torch", "workload": "W1", "status": "ok", "median_us": 812.5,
             "min_us": 800.0, "max_us": 830.0, "placement": "cpu", "problems": []},
            {"system": "cupy", "workload": "W1", "status": "unavailable",
             "problems": ["CuPy not importable (No module named 'cupy')"]},
        ],
    }
    table = gpu_report.summary_table(results)
    assert "| W1 mlp-digits | 812 (not on GPU!) | unavailable |" in table
    assert table.splitlines()[-1] == (
        "| unavailable: why |  | CuPy not importable (No module named 'cupy') |")
    assert gpu_report.markdown(results).rstrip().endswith(table.splitlines()[-1])


def test_a_static_cell_says_whether_it_replayed_a_cuda_graph() -> None:
    from bench.gpu_run import cuda_graph_note

    def runner(replays: int, reason: str | None):
        graphs = SimpleNamespace(replays=replays, reason=reason)
        run = SimpleNamespace(program=SimpleNamespace(graphs=graphs))
        return SimpleNamespace(sess=SimpleNamespace(_runs={"step": run}))

    assert cuda_graph_note(runner(40, None)) == "CUDA graph replayed 40x"
    assert cuda_graph_note(runner(0, "einsum ...")) == "no CUDA graph (einsum ...)"
    assert cuda_graph_note(SimpleNamespace()) == ""
    # as the bench passes it: inside the Synced wrapper of bench/gpu_systems.py (this case was
    # missing, and the H200 run's static cells said nothing about their CUDA graphs)
    from bench.gpu_systems import Synced

    wrapped = Synced(runner(7, None), lambda: None, "optimize=2", lambda: "cuda:0")
    assert cuda_graph_note(wrapped) == "CUDA graph replayed 7x"
