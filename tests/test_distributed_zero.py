"""ZeRO-1 (`dj.distributed.optim.ZeroRedundancyOptimizer`): the checks of
`distributed_zero_ranks.py` in one process and under `mpiexec -n 2`; the sharding rule, merging
saved shards, and errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from distributed_zero_ranks import CHECKS
from test_distributed import _mpiexec

import dongjing as dj
from dongjing.distributed import DistributedError
from dongjing.distributed.optim import ZeroRedundancyOptimizer, merge_shards, partition_parameters

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "distributed_zero_ranks.py"


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_one_process(check):
    check()


def test_two_ranks_shard_the_state():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env["OMP_NUM_THREADS"] = "1"
    run = subprocess.run([_mpiexec(), "-n", "2", sys.executable, str(SCRIPT)],
                         capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    for check in CHECKS:
        for rank in range(2):
            assert f"rank {rank}/2: {check.__name__} ok" in run.stdout, run.stdout


def test_shards_are_even_by_size():
    assert partition_parameters([35, 7, 21, 3], 2) == [0, 1, 1, 1]  # 35 | 31
    assert partition_parameters([10, 10, 10, 10], 4) == [0, 1, 2, 3]
    assert partition_parameters([4, 4], 3) == [0, 1]  # rank 2 owns nothing
    assert partition_parameters([5], 1) == [0]


def test_saved_shards_merge_into_the_plain_layout():
    a = {"state": {2: {"m": np.ones(2)}}, "param_groups": [{"lr": 0.1, "params": [2]}]}
    b = {"state": {0: {"m": np.zeros(3)}}, "param_groups": [{"lr": 0.1, "params": [0, 1]}]}
    merged = merge_shards([a, b, {"state": {}, "param_groups": []}], 3)
    assert list(merged["state"]) == [0, 2]
    assert merged["param_groups"] == [{"lr": 0.1, "params": [0, 1, 2]}]
    with pytest.raises(DistributedError, match="no shard holds"):
        merge_shards([{"state": {}, "param_groups": []}], 1)


def test_bad_arguments_raise_clear_errors():
    lin = dj.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="empty parameter list"):
        ZeroRedundancyOptimizer([], dj.optim.SGD, lr=0.1)
    with pytest.raises(DistributedError, match="not parameter groups"):
        ZeroRedundancyOptimizer([{"params": lin.parameters()}], dj.optim.SGD, lr=0.1)
    opt = ZeroRedundancyOptimizer(lin.parameters(), dj.optim.SGD, lr=0.1)
    with pytest.raises(DistributedError, match="consolidate_state_dict"):
        opt.state_dict()
    with pytest.raises(DistributedError, match="rank 3 is not in a world of 1"):
        opt.consolidate_state_dict(to=3)
    with pytest.raises(DistributedError, match="one group of 2"):
        opt.load_state_dict({"state": {}, "param_groups": [{"lr": 0.1, "params": [0]}]})
