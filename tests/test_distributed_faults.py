"""Faults under `mpiexec -n 2` with the default `dist.init()`: a rank that exits early, stops or
is killed while the other waits in an all-reduce ends the job within seconds, with an error
naming it; ranks that finish at different times end cleanly. Skipped without the dist extra."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_distributed import _mpiexec

import dongjing.distributed as dist
from dongjing.distributed.liveness import EXIT_GRACE, Watch

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "distributed_fault_ranks.py"


def _launch(mode: str) -> tuple[subprocess.CompletedProcess, float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env["OMP_NUM_THREADS"] = "1"
    start = time.monotonic()
    run = subprocess.run([_mpiexec(), "-n", "2", sys.executable, str(SCRIPT), mode],
                         capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    return run, time.monotonic() - start


def test_a_rank_that_exits_early_is_named_by_the_waiting_rank():
    run, seconds = _launch("exit")  # default init(): no timeout given
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert "rank 0 saw after" in out and "rank 1 exited while rank 0 of 2 waits" in out, out
    assert "collective returned" not in out
    assert seconds < 60, seconds  # notice (<= 1 s) + grace (2 s) + start and abort


def test_a_stopped_rank_is_named_after_the_liveness_limit():
    run, seconds = _launch("stop")  # SIGSTOP: the process exists but never answers
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert "rank 1 has not answered for" in out and "the limit is 2 s" in out, out
    assert seconds < 60, seconds


def test_a_killed_rank_ends_the_job_through_the_launcher():
    run, seconds = _launch("kill")
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert "signal 9" in out or "EXIT CODE: 9" in out or "rank 1" in out, out
    assert "collective returned" not in out
    assert seconds < 60, seconds


def test_ranks_that_finish_at_different_times_end_cleanly():
    run, _ = _launch("finish")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "rank 0 finished" in run.stdout and "rank 1 finished" in run.stdout


def _watch(timeout: float) -> Watch:
    """A Watch's bookkeeping without MPI or its thread (check() reads only these)."""
    watch = Watch.__new__(Watch)
    watch.rank, watch.timeout = 0, timeout
    now = time.monotonic()
    watch.last_seen, watch.exited, watch.broken = {1: now, 2: now}, {}, {}
    return watch


def test_check_names_the_silent_exited_or_unreachable_rank():
    watch = _watch(timeout=5.0)
    assert watch.check("barrier", 3) is None
    watch.last_seen[2] -= 6.0
    assert "barrier: rank 2 has not answered for 6.0 s" in watch.check("barrier", 3)
    watch = _watch(timeout=5.0)
    watch.exited[1] = time.monotonic()
    assert watch.check("all_gather", 3) is None  # within the grace: its data may be in flight
    watch.exited[1] -= EXIT_GRACE + 0.1
    assert "all_gather: rank 1 exited while rank 0 of 3 waits" in watch.check("all_gather", 3)
    watch = _watch(timeout=5.0)
    watch.broken[2] = "MPI_ERR_OTHER"
    assert "rank 2 is unreachable" in watch.check("broadcast", 3)


def test_liveness_must_be_positive():
    with pytest.raises(dist.DistributedError, match="liveness must be a positive"):
        dist.init(liveness=0)
