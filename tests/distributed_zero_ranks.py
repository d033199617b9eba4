"""ZeRO-1 checks that hold at any world size: `tests/test_distributed_zero.py` runs them in one
process and under `mpiexec -n 2`. Each compares with one process running the plain optimizer on
the whole batch."""

from __future__ import annotations

import sys

import numpy as np

import dongjing as dj
import dongjing.distributed as dist
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing.distributed.optim import ZeroRedundancyOptimizer
from dongjing.nn.parallel import DistributedDataParallel

BATCH = 8


def _model():
    dj.manual_seed(2)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3))


def _batch(step: int):
    rng = np.random.default_rng(20 + step)
    return rng.standard_normal((BATCH, 5)).astype(np.float32), rng.integers(0, 3, BATCH)


def _shard(a):
    n = a.shape[0] // dist.get_world_size()
    return a[dist.get_rank() * n:(dist.get_rank() + 1) * n]


def _plain(steps: int):
    """One process, plain Adam on the whole batch: the model and its optimizer after `steps`."""
    model = _model()
    opt = dj.optim.Adam(model.parameters(), lr=0.05)
    for s in range(steps):
        x, y = _batch(s)
        opt.zero_grad()
        F.cross_entropy(model(dj.tensor(x)), dj.tensor(y)).backward()
        opt.step()
    return model, opt


def _zero_steps(ddp, opt, steps, first=0):
    for s in range(first, first + steps):
        x, y = _batch(s)
        opt.zero_grad()
        F.cross_entropy(ddp(dj.tensor(_shard(x))), dj.tensor(_shard(y))).backward()
        opt.step()


def check_zero_adam_equals_one_process():
    """Three Adam steps with sharded state: every rank ends with the parameters of one process;
    each rank holds state for its shard only, and the shards cover every parameter once."""
    ddp = DistributedDataParallel(_model())
    opt = ZeroRedundancyOptimizer(ddp.parameters(), dj.optim.Adam, lr=0.05)
    _zero_steps(ddp, opt, 3)
    want, _ = _plain(3)
    for p, q in zip(ddp.module.parameters(), want.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6)
    held = 0 if opt.optim is None else len(opt.optim.state)
    total = int(dist.all_reduce(dj.tensor([held])).numpy()[0])
    assert total == len(opt.params), (total, len(opt.params))
    if dist.get_world_size() > 1:
        assert held < len(opt.params)


def check_zero_checkpoints_move_between_world_sizes():
    """The consolidated state equals the one-process optimizer's; a one-process state dict
    loads onto any number of ranks, and training continues as in one process."""
    ddp = DistributedDataParallel(_model())
    opt = ZeroRedundancyOptimizer(ddp.parameters(), dj.optim.Adam, lr=0.05)
    _zero_steps(ddp, opt, 2)
    opt.consolidate_state_dict(to=0)
    plain_model, plain_opt = _plain(2)
    want = plain_opt.state_dict()
    if dist.get_rank() == 0:
        got = opt.state_dict()
        assert sorted(got["state"]) == sorted(want["state"])
        assert got["param_groups"][0]["params"] == want["param_groups"][0]["params"]
        for k, entry in want["state"].items():
            for name, value in entry.items():
                np.testing.assert_allclose(np.asarray(got["state"][k][name]),
                                           np.asarray(value), rtol=1e-5, atol=1e-7,
                                           err_msg=f"state {k} {name}")
    else:
        try:
            opt.state_dict()
        except dist.DistributedError as exc:
            assert "consolidate_state_dict" in str(exc)
        else:
            raise AssertionError("state_dict() off the consolidating rank returned")
    # a fresh ZeRO optimizer on this world size, from the one-process checkpoint
    ddp = DistributedDataParallel(plain_model)
    opt = ZeroRedundancyOptimizer(ddp.parameters(), dj.optim.Adam, lr=0.5)
    opt.load_state_dict(want)
    _zero_steps(ddp, opt, 1, first=2)
    after, _ = _plain(3)
    for p, q in zip(ddp.module.parameters(), after.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6)


CHECKS = [check_zero_adam_equals_one_process, check_zero_checkpoints_move_between_world_sizes]

if __name__ == "__main__":
    dist.init(timeout=120)
    for check in CHECKS:
        check()
        print(f"rank {dist.get_rank()}/{dist.get_world_size()}: {check.__name__} ok", flush=True)
    sys.exit(0)
