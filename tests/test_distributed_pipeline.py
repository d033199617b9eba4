"""dj.distributed.pipeline.Pipe: the checks of `distributed_pipeline_ranks.py` in one process
(every stage local) and under `mpiexec -n 2` and `-n 4` (one stage per rank; 4 ranks on 2
cores, oversubscribed); the schedules' orders; clear errors for bad arguments."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from distributed_pipeline_ranks import CHECKS
from test_distributed import run_rank_checks

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing.distributed import DistributedError
from dongjing.distributed.p2p import Sender
from dongjing.distributed.pipeline import Pipe
from dongjing.distributed.schedules import peak_in_flight, schedule_order

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "distributed_pipeline_ranks.py"


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_one_process_runs_every_stage(check):
    check()


@pytest.mark.parametrize("ranks", [2, 4])
def test_ranks_hold_one_stage_each(ranks):
    run_rank_checks(SCRIPT, ranks, CHECKS)


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize("stages,chunks", [(1, 1), (1, 4), (2, 4), (4, 2), (4, 8)])
def test_each_stage_runs_each_micro_batch_forward_then_backward(schedule, stages, chunks):
    for stage in range(stages):
        order = schedule_order(schedule, stage, stages, chunks)
        assert sorted(order) == sorted([(k, m) for k in "FB" for m in range(chunks)])
        for m in range(chunks):
            assert order.index(("F", m)) < order.index(("B", m))
        assert [m for k, m in order if k == "F"] == list(range(chunks))  # inputs in order


def test_1f1b_holds_fewer_activations_than_gpipe():
    stages, chunks = 4, 8
    for stage in range(stages):
        assert peak_in_flight(schedule_order("gpipe", stage, stages, chunks)) == chunks
        assert peak_in_flight(schedule_order("1f1b", stage, stages, chunks)) == stages - stage
    assert schedule_order("1f1b", 3, 4, 3) == [("F", 0), ("B", 0), ("F", 1), ("B", 1),
                                               ("F", 2), ("B", 2)]


def _model():
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(DistributedError, match=r"balance \[1, 1\] .* 3 layers"):
        Pipe(_model(), balance=[1, 1])
    with pytest.raises(DistributedError, match="balance"):
        Pipe(_model(), balance=[3, 0])
    with pytest.raises(DistributedError, match="chunks must be a positive integer"):
        Pipe(_model(), balance=[3], chunks=0)
    with pytest.raises(DistributedError, match="schedule must be one of"):
        Pipe(_model(), balance=[3], schedule="zigzag")
    with pytest.raises(TypeError, match="nn.Sequential"):
        Pipe(nn.Linear(2, 2), balance=[1])
    pipe = Pipe(_model(), balance=[2, 1], chunks=4)
    with pytest.raises(DistributedError, match="3 rows cannot make 4 micro-batches"):
        pipe.step(dj.ones(3, 3), dj.zeros(3, dtype=dj.int64), F.cross_entropy)
    with pytest.raises(DistributedError, match="reduction must be one of"):
        pipe.step(dj.ones(4, 3), dj.zeros(4, dtype=dj.int64), F.cross_entropy, reduction="max")


def test_a_send_refuses_an_array_it_cannot_describe():
    with pytest.raises(dj.DTypeError, match="cannot send an array of dtype complex128"):
        Sender(comm=None).send(np.zeros(2, np.complex128), 1, 0, "Pipe.step forward")
