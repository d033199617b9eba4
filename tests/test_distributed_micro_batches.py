"""Static graphs in micro-batches: the checks of `distributed_micro_batch_ranks.py` in one process
and under `mpiexec -n 2` and `-n 4`; the phases a step is cut into; the Session's arguments."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from distributed_micro_batch_ranks import CHECKS
from test_distributed import _mpiexec

import dongjing as dj
import dongjing.nn.functional as F
from dongjing.distributed import DistributedError
from dongjing.distributed.micro_batches import BACKWARD, FORWARD, UPDATE, classify
from dongjing.distributed.partition import needed
from dongjing.errors import ArgumentError, DongjingError

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "distributed_micro_batch_ranks.py"


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_one_process_runs_every_stage(check):
    check()


@pytest.mark.parametrize("ranks", [2, 4])
def test_ranks_run_one_stage_each(ranks):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env["OMP_NUM_THREADS"] = "1"
    run = subprocess.run([_mpiexec(), "-n", str(ranks), sys.executable, str(SCRIPT)],
                         capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    for check in CHECKS:
        for rank in range(ranks):
            assert f"rank {rank}/{ranks}: {check.__name__} ok" in run.stdout, run.stdout


def _step():
    layer = dj.nn.Linear(3, 2)
    opt = dj.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
    with dj.Graph() as g:
        x = dj.placeholder((None, 3))
        y = dj.placeholder((None,), dj.int64)
        logits = layer(x)
        loss = F.cross_entropy(logits, y)
        train = opt.minimize(loss)
    return g, x, y, logits, loss, train


def test_a_step_is_cut_into_forward_backward_and_update():
    g, x, y, logits, loss, train = _step()
    order = needed([loss._node, train._node])
    phases = classify(g, order, [x._node, y._node])
    assert phases.of[logits._node] == FORWARD and phases.of[loss._node] == FORWARD
    assert all(phases.of[n] == BACKWARD for n in phases.gradients)
    assert len(phases.gradients) == 2  # the weight's and the bias's
    assigns = [n for n in order if n.op.name == "assign"]
    assert assigns and all(phases.of[n] == UPDATE for n in assigns)
    assert phases.of[train._node] == UPDATE
    assert all(phases.of[n] is None for n in order if n.op.name in ("placeholder", "variable"))
    # the batch rows reach the forward and backward values, not the summed gradients' users
    assert logits._node in phases.batched
    assert not any(n in phases.batched for n in assigns)


def test_an_update_that_reads_the_batch_rows_is_refused():
    v = dj.Variable(np.zeros(2, np.float32), name="v")
    layer = dj.nn.Linear(3, 2)
    with dj.Graph() as g:
        x = dj.placeholder((None, 3))
        out = layer(x)
        loss = dj.mean(out * out)
        (grad,) = dj.gradients(loss, [layer.bias])
        step = dj.assign(v, grad + out[0])  # a gradient and one row of the batch
    with pytest.raises(DistributedError, match="reads 'getitem.*not a gradient"):
        classify(g, needed([step._node]), [x._node])


def test_session_arguments_are_checked():
    g, x, y, logits, loss, train = _step()
    for bad in (0, -1, 2.5, True, "2"):
        with pytest.raises(DongjingError, match="pipeline_chunks must be a positive integer"):
            dj.Session(g, pipeline_chunks=bad)
    with pytest.raises(ArgumentError, match="pipeline_schedule"):
        dj.Session(g, pipeline_chunks=2, pipeline_schedule="interleaved")
    sess = dj.Session(g, pipeline_chunks=2)
    with pytest.raises(DongjingError, match="different row counts"):
        sess.run(loss, {x: np.ones((4, 3), np.float32), y: np.zeros(3, np.int64)})
