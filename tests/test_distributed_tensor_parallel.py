"""Tensor parallelism (`dongjing.distributed.tensor_parallel`): the checks of
`distributed_tensor_parallel_ranks.py` in one process (every split whole) and under
`mpiexec -n 2` and `-n 4` (each rank holds half of each layer)."""

from __future__ import annotations

from pathlib import Path

import pytest
from distributed_tensor_parallel_ranks import CHECKS
from test_distributed import run_rank_checks

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "distributed_tensor_parallel_ranks.py"


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_one_process_holds_whole_layers(check):
    check()


@pytest.mark.parametrize("ranks", [2, 4])
def test_ranks_split_every_layer(ranks):
    run_rank_checks(SCRIPT, ranks, CHECKS)
