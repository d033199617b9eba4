"""Tensor parallelism (`dongjing.distributed.tensor_parallel`): the checks of
`distributed_tensor_parallel_ranks.py` in one process (every split whole) and under
`mpiexec -n 2` and `-n 4` (each rank holds half of each layer)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from distributed_tensor_parallel_ranks import CHECKS
from test_distributed import _mpiexec

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "distributed_tensor_parallel_ranks.py"


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_one_process_holds_whole_layers(check):
    check()


@pytest.mark.parametrize("ranks", [2, 4])
def test_ranks_split_every_layer(ranks):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env["OMP_NUM_THREADS"] = "1"
    run = subprocess.run([_mpiexec(), "-n", str(ranks), sys.executable, str(SCRIPT)],
                         capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    for check in CHECKS:
        for rank in range(ranks):
            assert f"rank {rank}/{ranks}: {check.__name__} ok" in run.stdout, run.stdout
