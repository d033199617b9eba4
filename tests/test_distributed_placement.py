"""Placing a static graph on MPI ranks (`with dj.device("rank:N")`, compat.v1's
`tf.device("/job:worker/task:N")`): the checks of `distributed_placement_ranks.py` in one
process and under `mpiexec -n 2` and `-n 4`; the partitioner's cut on its own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from distributed_placement_ranks import CHECKS
from test_distributed import run_rank_checks

import dongjing as dj
import dongjing.compat.v1 as tf
from dongjing.distributed import DistributedError
from dongjing.distributed.partition import COPIED, assign_ranks, needed, partition
from dongjing.errors import DeviceError

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "distributed_placement_ranks.py"


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_one_process_runs_the_whole_graph(check):
    check()


@pytest.mark.parametrize("ranks", [2, 4])
def test_each_rank_runs_its_partition(ranks):
    run_rank_checks(SCRIPT, ranks, CHECKS)


def _cut_graph():
    w = dj.Variable(np.ones((3, 2), np.float32), name="w")
    with dj.Graph() as g:
        x = dj.placeholder((4, 3), name="x")
        with dj.device("rank:0"):
            h = (x @ w).tanh()
        with dj.device("rank:1"):
            loss = (h * h).sum()
        (grad,) = dj.gradients(loss, [w])
        step = dj.assign(w, w - 0.1 * grad)
    return g, x, w, h, loss, grad, step


def test_the_partitioner_cuts_values_forward_and_gradients_back():
    g, x, w, h, loss, grad, step = _cut_graph()
    order = needed([loss._node, step._node])
    ranks = assign_ranks(order, 2)
    assert ranks[x._node] == COPIED
    assert ranks[h._node] == 0 and ranks[loss._node] == 1
    assert ranks[grad._node] == 0  # the gradient of the matmul is taken where it ran
    assert ranks[step._node] == 0  # the update runs where the Variable lives
    parts = [partition(g, [loss._node, step._node], r, 2) for r in range(2)]
    ops = [[n.op.name for n in p.graph.nodes] for p in parts]
    # rank 0 sends h forward and receives its gradient; rank 1 the other way round. Each
    # fetch computed on one rank goes to the other: the loss, and the assignment's new value
    assert ops[0].count("send") == 2 and ops[0].count("recv") == 2, ops[0]
    assert ops[1].count("send") == 2 and ops[1].count("recv") == 2, ops[1]
    assert "assign" in ops[0] and "assign" not in ops[1]
    assert "matmul" in ops[0] and "matmul" not in ops[1]
    assert "tanh_backward" in ops[0] and "sum" in ops[1]
    assert parts[1].fetches[1].op.name == "recv" and parts[0].fetches[1].op.name == "assign"
    for p in parts:
        p.graph.verify()


def test_placement_scopes_nest_and_reach_compat_v1():
    with dj.Graph():
        with dj.device("rank:2"):
            a = dj.constant(1.0) + 1.0
            with dj.device("rank:1"):
                b = a * 3.0
            c = b - 1.0
        d = c * 2.0
        with tf.device("/job:worker/task:3"):
            e = d + 1.0
            with tf.device("/cpu:0"):  # a device without a task keeps the task's rank
                f = e + 1.0
    assert [t._node.rank for t in (a, b, c, d, e, f)] == [2, 1, 2, None, 3, 3]


def test_bad_placements_raise_clear_errors():
    with pytest.raises(DeviceError, match="name the MPI rank"):
        dj.device("rank")
    with pytest.raises(DeviceError, match="only a rank placement"):
        with dj.device("cpu"):
            pass
    with dj.Graph():
        with dj.device("rank:5"):
            z = dj.constant(1.0) * 2.0
    with pytest.raises(DistributedError, match="placed on rank 5, but the world has 2"):
        assign_ranks(needed([z._node]), 2)
