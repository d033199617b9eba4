"""Data-parallel checks that hold at any world size: pytest runs them in one process (world
size 1); `tests/test_distributed.py` runs this file under `mpiexec -n 2` (then every rank
runs every check, and any failure aborts the job with an error)."""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

import dongjing as dj
import dongjing.distributed as dist
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing.nn.parallel import DistributedDataParallel, SyncBatchNorm
from dongjing.utils.data import DataLoader, DistributedSampler, TensorDataset

STEPS = 20
GLOBAL_BATCH = 16
BUCKET_MB = 0.0002  # ~200 bytes: several buckets even for this small model


class Net(nn.Module):
    """An MLP with a parameter it never uses (DDP must leave its .grad alone)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 4))
        self.unused = nn.Linear(3, 3)

    def forward(self, x):
        return self.body(x)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((STEPS, GLOBAL_BATCH, 6)).astype(np.float32)
    y = rng.integers(0, 4, (STEPS, GLOBAL_BATCH))
    return x, y


def _model():
    dj.manual_seed(1 + dist.get_rank())  # ranks start apart: DDP's broadcast must align them
    return Net()


def _reference() -> list[np.ndarray]:
    """One process, the whole global batch per step: the parameters after STEPS steps."""
    dj.manual_seed(1)
    model = Net()
    opt = dj.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = _data()
    for s in range(STEPS):
        opt.zero_grad()
        F.cross_entropy(model(dj.tensor(x[s])), dj.tensor(y[s])).backward()
        opt.step()
    return [p.numpy().copy() for p in model.parameters()]


def _shard(a):
    """This rank's rows of a global batch (a contiguous block)."""
    n = a.shape[0] // dist.get_world_size()
    r = dist.get_rank()
    return a[r * n:(r + 1) * n]


def _assert_params(model, expected, what):
    for p, want in zip(model.parameters(), expected):
        np.testing.assert_allclose(p.numpy(), want, rtol=1e-6, atol=1e-7, err_msg=what)


def check_ddp_eager():
    ddp = DistributedDataParallel(_model(), bucket_cap_mb=BUCKET_MB)
    assert len(ddp._buckets) > 2
    opt = dj.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    x, y = _data()
    for s in range(STEPS):
        opt.zero_grad()
        F.cross_entropy(ddp(dj.tensor(_shard(x[s]))), dj.tensor(_shard(y[s]))).backward()
        opt.step()
    assert ddp.module.unused.weight.grad is None
    _assert_params(ddp.module, _reference(), "eager DDP")


def check_ddp_jit():
    ddp = DistributedDataParallel(_model(), bucket_cap_mb=BUCKET_MB)
    opt = dj.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)

    @dj.jit
    def step(xb, yb):
        opt.zero_grad()
        loss = F.cross_entropy(ddp(xb), yb)
        loss.backward()
        opt.step()
        return loss

    x, y = _data()
    for s in range(STEPS):
        step(dj.tensor(_shard(x[s])), dj.tensor(_shard(y[s])))
    assert "all_reduce" in str(step.graph(dj.tensor(_shard(x[0])), dj.tensor(_shard(y[0]))))
    _assert_params(ddp.module, _reference(), "jit DDP")


def check_static_graph():
    model = _model()
    dist.broadcast_parameters(model.parameters())
    opt = dj.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    n = GLOBAL_BATCH // dist.get_world_size()
    with dj.Graph() as g:
        xb = dj.placeholder((n, 6))
        yb = dj.placeholder((n,), dj.int64)
        train = opt.minimize(F.cross_entropy(model(xb), yb), distributed=True,
                             bucket_cap_mb=BUCKET_MB)
    sess = dj.Session(g)
    assert "all_reduce" in str(sess.optimized_graph(train))
    x, y = _data()
    for s in range(STEPS):
        sess.run(train, {xb: _shard(x[s]), yb: _shard(y[s])})
    _assert_params(model, _reference(), "static graph, minimize(distributed=True)")


def check_no_sync():
    """Two local micro-batches under no_sync, a third synchronized: the sum of the three
    global-batch gradients, as one process computes it."""
    ddp = DistributedDataParallel(_model(), bucket_cap_mb=BUCKET_MB)
    x, y = _data(seed=3)
    with ddp.no_sync():
        for s in range(2):
            F.cross_entropy(ddp(dj.tensor(_shard(x[s]))), dj.tensor(_shard(y[s]))).backward()
    local = ddp.module.body[0].weight.grad
    gathered = dist.all_gather(local).numpy()
    if dist.get_world_size() > 1:
        assert not np.allclose(gathered[0], gathered[1]), "no_sync still reduced"
    F.cross_entropy(ddp(dj.tensor(_shard(x[2]))), dj.tensor(_shard(y[2]))).backward()
    dj.manual_seed(1)
    ref = Net()
    for s in range(3):
        F.cross_entropy(ref(dj.tensor(x[s])), dj.tensor(y[s])).backward()
    for p, q in zip(ddp.module.body.parameters(), ref.body.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, atol=1e-7)


class Divergent(nn.Module):
    """Ranks run different graphs: rank 0 multiplies by a scaled `a.T` (a transposed gradient
    for `a`) and uses `b`; the others multiply by `a` (a C-order gradient) and never touch
    `b`, so the buckets fill in a different order on each rank. Every rank gets a transposed
    gradient for `c`."""

    def __init__(self):
        super().__init__()
        self.first = nn.Linear(4, 6)
        self.a = nn.Parameter(dj.randn(6, 6))
        self.b = nn.Linear(6, 6)
        self.c = nn.Parameter(dj.randn(6, 6))
        self.last = nn.Linear(6, 2)

    def forward(self, x):
        h = self.first(x).tanh()
        if dist.get_rank() == 0:
            h = self.b(h @ (self.a.T * 1.5))
        else:
            h = h @ self.a
        return self.last(h @ (self.c.T * 0.5))


def check_ddp_divergent_graphs():
    """Each `.grad` is the average of the ranks' local gradients (zero where a rank has none)
    when ranks differ in which parameters they use and in the layout of their gradients; with
    and without the helper thread; `.grad` keeps the layout one process gives it."""
    dj.manual_seed(2)
    for use_thread in (True, False):
        ddp = DistributedDataParallel(Divergent(), bucket_cap_mb=BUCKET_MB)
        if ddp._reducer is not None:
            ddp._reducer.use_thread = use_thread
        x = np.random.default_rng(dist.get_rank()).standard_normal((5, 4)).astype(np.float32)
        for _ in range(3):  # the layouts are agreed after the first backward
            ddp.zero_grad()
            (ddp.module(dj.tensor(x)) ** 2).sum().backward()  # the bare module: local grads
            local = [dj.zeros(p.shape) if p.grad is None else p.grad.detach().clone()
                     for p in ddp.parameters()]
            ddp.zero_grad()
            (ddp(dj.tensor(x)) ** 2).sum().backward()
            for p, g in zip(ddp.parameters(), local):
                want = dist.all_reduce(g, "mean").numpy()
                np.testing.assert_allclose(p.grad.numpy(), want, rtol=1e-6, atol=1e-7)
        transposed = ddp.module.c.grad.numpy()
        assert transposed.flags.f_contiguous and not transposed.flags.c_contiguous
        assert ddp.module.first.weight.grad.numpy().flags.c_contiguous
        if dist.get_world_size() > 1:  # voted transposed by rank 0 only: kept in C order
            assert ddp.module.a.grad.numpy().flags.c_contiguous


def check_sync_batchnorm():
    """SyncBatchNorm under DDP: the outputs and gradients of BatchNorm on the whole batch."""
    dj.manual_seed(5)
    ref = nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.Linear(5, 2))
    dj.manual_seed(5)
    model = SyncBatchNorm.convert_sync_batchnorm(
        nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.Linear(5, 2)))
    assert isinstance(model[1], SyncBatchNorm)
    ddp = DistributedDataParallel(model)
    x = np.random.default_rng(7).standard_normal((8, 3)).astype(np.float32)
    out = ddp(dj.tensor(_shard(x)))
    (out * out).mean().backward()
    want = ref(dj.tensor(x))
    (want * want).mean().backward()
    np.testing.assert_allclose(out.numpy(), _shard(want.numpy()), rtol=1e-5, atol=1e-6)
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model[1].running_var.numpy(), ref[1].running_var.numpy(),
                               rtol=1e-5)


def check_sync_batchnorm_jit():
    """Three SGD steps of a dj.jit-traced step through DDP + SyncBatchNorm: the parameters and
    running statistics of BatchNorm trained on the whole batch."""
    dj.manual_seed(5)
    ref = nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.Linear(5, 2))
    dj.manual_seed(5)
    model = SyncBatchNorm.convert_sync_batchnorm(
        nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.Linear(5, 2)))
    ddp = DistributedDataParallel(model)
    opt, ref_opt = dj.optim.SGD(ddp.parameters(), lr=0.1), dj.optim.SGD(ref.parameters(), lr=0.1)

    @dj.jit
    def step(xb):
        opt.zero_grad()
        out = ddp(xb)
        (out * out).mean().backward()
        opt.step()

    x = np.random.default_rng(7).standard_normal((8, 3)).astype(np.float32)
    for _ in range(3):
        step(dj.tensor(_shard(x)))
        ref_opt.zero_grad()
        out = ref(dj.tensor(x))
        (out * out).mean().backward()
        ref_opt.step()
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model[1].running_mean.numpy(), ref[1].running_mean.numpy(),
                               rtol=1e-5, atol=1e-6)


def check_sampler():
    size, rank = dist.get_world_size(), dist.get_rank()
    for n, drop_last in ((23, False), (23, True), (24, False)):
        sampler = DistributedSampler(range(n), drop_last=drop_last, seed=4)
        for epoch in range(2):
            sampler.set_epoch(epoch)
            mine = dj.tensor(sampler.indices())
            every = dist.all_gather(mine).numpy()  # raises unless all ranks have one length
            assert len(sampler) == every.shape[1]
            flat = every.T.reshape(-1)  # dealt round-robin: rank order, step by step
            order = np.random.default_rng(4 + epoch).permutation(n)
            if drop_last:
                assert flat.size == n - n % size
                np.testing.assert_array_equal(flat, order[:flat.size])
            else:
                assert flat.size == -(-n // size) * size
                np.testing.assert_array_equal(flat[:n], order)  # each index once ...
                np.testing.assert_array_equal(flat[n:], order[:flat.size - n])  # ... + padding
        assert rank == sampler.rank
    data = TensorDataset(dj.arange(10))
    loader = DataLoader(data, batch_size=2, sampler=DistributedSampler(data, shuffle=False))
    got = np.concatenate([b[0].numpy() for b in loader])
    np.testing.assert_array_equal(got, np.arange(10)[rank::size][:len(got)])


def check_collectives():
    size, rank = dist.get_world_size(), dist.get_rank()
    ranks = np.arange(1, size + 1)
    for dtype in (dj.float16, dj.float32, dj.float64, dj.int32, dj.int64):
        t = dj.full((3, 2), rank + 1, dtype=dtype)
        assert dist.all_reduce(t) is t and t.dtype == dtype
        np.testing.assert_array_equal(t.numpy(), np.full((3, 2), ranks.sum()))
        t = dj.full((5,), rank + 1, dtype=dtype)
        np.testing.assert_array_equal(dist.all_reduce(t, "max").numpy(), np.full(5, size))
        if dtype.kind == "f":
            t = dj.full((2,), rank + 1, dtype=dtype)
            np.testing.assert_allclose(dist.all_reduce(t, "mean").numpy(), ranks.mean())
        out = dist.functional.all_reduce(dj.full((2,), rank + 1, dtype=dtype))
        assert out.dtype == dtype and int(out.numpy()[0]) == ranks.sum()
    flag = dj.tensor([rank == 0, False])
    np.testing.assert_array_equal(dist.all_reduce(flag).numpy(), [True, False])
    view = dj.zeros((4, 4))[:, 1]  # not contiguous: staged through a copy
    view.data[...] = rank + 1
    np.testing.assert_array_equal(dist.all_reduce(view).numpy(), np.full(4, ranks.sum()))
    t = dj.full((3,), float(rank))
    np.testing.assert_array_equal(dist.broadcast(t, src=size - 1).numpy(), np.full(3, size - 1))
    gathered = dist.all_gather(dj.tensor([rank, 10 * rank]))
    np.testing.assert_array_equal(gathered.numpy(), [[r, 10 * r] for r in range(size)])
    with dj.Graph() as g:
        x = dj.placeholder((2,))
        y = dist.functional.all_reduce(x * 2.0, "mean")
    np.testing.assert_allclose(dj.Session(g).run(y, {x: np.full(2, rank + 1.0)}),
                               2 * ranks.mean())
    dist.barrier()


def check_checkpoint():
    path = os.path.join(tempfile.gettempdir(), f"dj_dist_ckpt_{os.getppid()}.safetensors")
    if dist.get_world_size() == 1:
        path = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
    model = DistributedDataParallel(_model())
    dist.save(model.module.state_dict(), path)
    loaded = dj.load(path)  # the barrier inside save: the file is complete on every rank
    np.testing.assert_array_equal(loaded["body.0.weight"].numpy(),
                                  model.module.body[0].weight.numpy())
    dist.barrier()
    if dist.get_rank() == 0:
        os.remove(path)


CHECKS = [check_collectives, check_ddp_eager, check_ddp_jit, check_static_graph, check_no_sync,
          check_ddp_divergent_graphs, check_sync_batchnorm, check_sync_batchnorm_jit,
          check_sampler, check_checkpoint]


# pytest: every check in one process (world size 1)
def test_collectives():
    check_collectives()


def test_ddp_eager():
    check_ddp_eager()


def test_ddp_jit():
    check_ddp_jit()


def test_static_graph():
    check_static_graph()


def test_no_sync():
    check_no_sync()


def test_ddp_divergent_graphs():
    check_ddp_divergent_graphs()


def test_sync_batchnorm():
    check_sync_batchnorm()


def test_sync_batchnorm_jit():
    check_sync_batchnorm_jit()


def test_sampler():
    check_sampler()


def test_checkpoint():
    check_checkpoint()


def main(argv: list[str]) -> None:
    dist.init(timeout=60)
    if argv and argv[0] == "raise":  # the last rank fails; the others wait in a collective
        if dist.get_rank() == dist.get_world_size() - 1:
            raise RuntimeError("rank failed on purpose")
        dist.all_reduce(dj.ones(3))
        print("collective returned without the failed rank", flush=True)
        return
    for check in CHECKS:
        check()
        print(f"rank {dist.get_rank()}/{dist.get_world_size()}: {check.__name__} ok", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
