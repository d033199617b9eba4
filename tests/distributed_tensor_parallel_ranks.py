"""Tensor-parallel checks that hold at any world size: `tests/test_distributed_tensor_parallel.py`
runs them in one process (every split is whole) and under `mpiexec -n 2`. Each compares with the
same model built from whole `nn.Linear` layers in this process."""

from __future__ import annotations

import sys

import numpy as np

import dongjing as dj
import dongjing.distributed as dist
import dongjing.nn.functional as F
from dongjing.distributed import tensor_parallel as tp

STEPS = 3


def _data():
    rng = np.random.default_rng(3)
    return rng.standard_normal((6, 4)).astype(np.float32), rng.integers(0, 3, 6)


def _slice(array, axis):
    return np.split(array, dist.get_world_size(), axis=axis)[dist.get_rank()]


def _train(parallel: bool, optimize: int, gather: bool):
    """STEPS SGD steps of Linear(4, 8) -> tanh -> Linear(8, 3) in a static graph: split over the
    ranks (Megatron's pair, or a gathered column split then a row split of a whole input) when
    `parallel`. Returns the losses, the gradient of the input, the output and the layers."""
    dj.manual_seed(5)
    first, second = dj.nn.Linear(4, 8), dj.nn.Linear(8, 3)
    if parallel:
        first = tp.ColumnParallelLinear.from_linear(first, gather_output=gather)
        second = tp.RowParallelLinear.from_linear(second, input_is_parallel=not gather)
    params = list(first.parameters()) + list(second.parameters())
    opt = dj.optim.SGD(params, lr=0.2, momentum=0.5)
    with dj.Graph() as g:
        x = dj.placeholder((None, 4))
        y = dj.placeholder((None,), dj.int64)
        out = second(first(x).tanh())
        loss = F.cross_entropy(out, y)
        (gx,) = dj.gradients(loss, [x])
        train = opt.minimize(loss)
    sess = dj.Session(g, optimize=optimize)
    xv, yv = _data()
    losses, grad_x = [], None
    for _ in range(STEPS):
        got = sess.run([loss, gx, train], {x: xv, y: yv})
        losses.append(got[0])
        grad_x = grad_x if grad_x is not None else got[1]
    return losses, grad_x, sess.run(out, {x: xv}), first, second


def check_static_training_equals_whole_layers():
    for gather in (False, True):
        for optimize in (0, 2):
            want = _train(False, optimize, gather)
            got = _train(True, optimize, gather)
            np.testing.assert_allclose(got[0], want[0], rtol=1e-5, err_msg="losses")
            np.testing.assert_allclose(got[1], want[1], rtol=1e-4, atol=1e-6, err_msg="d/dx")
            np.testing.assert_allclose(got[2], want[2], rtol=1e-4, atol=1e-6, err_msg="output")
            # after training, each rank's shard equals its slice of the whole layer
            np.testing.assert_allclose(got[3].weight.numpy(), _slice(want[3].weight.numpy(), 0),
                                       rtol=1e-4, atol=1e-6)
            np.testing.assert_allclose(got[3].bias.numpy(), _slice(want[3].bias.numpy(), 0),
                                       rtol=1e-4, atol=1e-6)
            np.testing.assert_allclose(got[4].weight.numpy(), _slice(want[4].weight.numpy(), 1),
                                       rtol=1e-4, atol=1e-6)
            np.testing.assert_allclose(got[4].bias.numpy(), want[4].bias.numpy(),
                                       rtol=1e-4, atol=1e-6)


def check_megatron_pair_has_one_all_reduce_each_way():
    dj.manual_seed(1)
    first = tp.ColumnParallelLinear(4, 8, gather_output=False)
    second = tp.RowParallelLinear(8, 2)
    with dj.Graph() as g:
        x = dj.placeholder((3, 4))
        loss = second(first(x).tanh()).sum()
        grads = dj.gradients(loss, [x, first.weight])
    ops = [n.op.name for n in dj.Session(g).optimized_graph(grads + [loss]).nodes]
    # forward: the row split's sum; backward: the column split's input gradient
    assert ops.count("tp_reduce") == 2, ops


def check_collectives_in_a_graph_and_eagerly():
    world, rank = dist.get_world_size(), dist.get_rank()
    base = np.arange(2 * world * 4 * world, dtype=np.float64).reshape(2 * world, 4 * world)
    mine = base + rank  # different on every rank
    with dj.Graph() as g:
        x = dj.placeholder(base.shape, dj.float64)
        gathered = tp.gather(tp.split(x, 1), 1)
        scattered = tp.reduce_scatter(x, 1)
        summed = tp.reduce(x)
        grads = dj.gradients((scattered * scattered).sum(), [x])
    got = dj.Session(g).run([gathered, scattered, summed, grads[0]], {x: mine})
    total = sum(base + r for r in range(world))
    np.testing.assert_allclose(got[0], np.concatenate(
        [np.split(base + r, world, 1)[r] for r in range(world)], 1))  # each rank's own slice
    np.testing.assert_allclose(got[1], _slice(total, 1))
    np.testing.assert_allclose(got[2], total)
    np.testing.assert_allclose(got[3], 2 * total)  # every rank's slice of 2*y, gathered
    eager = tp.gather(dj.tensor(_slice(mine, 0)), 0)
    want = np.concatenate([np.split(base + r, world, 0)[r] for r in range(world)])
    np.testing.assert_allclose(eager.numpy(), want)


def check_uneven_split_is_named():
    world = dist.get_world_size()
    if world == 1:
        return
    try:
        tp.ColumnParallelLinear(3, 2 * world + 1)
    except dist.DistributedError as exc:
        assert "does not split evenly" in str(exc) and str(world) in str(exc), exc
    else:
        raise AssertionError("an uneven split was accepted")


CHECKS = [check_static_training_equals_whole_layers,
          check_megatron_pair_has_one_all_reduce_each_way,
          check_collectives_in_a_graph_and_eagerly, check_uneven_split_is_named]

if __name__ == "__main__":
    dist.init(timeout=120)
    for check in CHECKS:
        check()
        print(f"rank {dist.get_rank()}/{dist.get_world_size()}: {check.__name__} ok", flush=True)
    sys.exit(0)
