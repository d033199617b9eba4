"""dj.distributed: one-process behaviour, error messages, the op in graphs, bucket planning,
and the `mpiexec -n 2` runs of `test_distributed_ranks.py` (skipped without the dist extra)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_distributed_ranks import CHECKS

import dongjing as dj
import dongjing.distributed as dist

ROOT = Path(__file__).resolve().parents[1]
RANKS = ROOT / "tests" / "test_distributed_ranks.py"


def _mpiexec() -> str:
    pytest.importorskip("mpi4py")
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.skip("no mpiexec (pip install mpich)")
    return found


def run_rank_checks(script: Path, ranks: int, checks) -> str:
    """Run `script`'s checks under `mpiexec -n ranks` (one thread each); every rank must
    report every check ok. Returns what the ranks printed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env["OMP_NUM_THREADS"] = "1"
    run = subprocess.run([_mpiexec(), "-n", str(ranks), sys.executable, str(script)],
                         capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    for check in checks:
        for rank in range(ranks):
            assert f"rank {rank}/{ranks}: {check.__name__} ok" in run.stdout, run.stdout
    return run.stdout


def _launch(*args: str, timeout: float) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), str(ROOT),
                                                      env.get("PYTHONPATH")]))
    env["OMP_NUM_THREADS"] = "1"  # two ranks on two cores
    return subprocess.run([_mpiexec(), "-n", "2", sys.executable, str(RANKS), *args],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


def test_two_ranks_run_every_check():
    """DDP (eager, jit, static graph) == one process on the whole batch, no_sync, the sampler,
    collectives of every dtype, SyncBatchNorm and checkpoints, on 2 ranks."""
    run = _launch(timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr
    for check in CHECKS:
        for rank in range(2):
            assert f"rank {rank}/2: {check.__name__} ok" in run.stdout, run.stdout + run.stderr


def test_a_failing_rank_ends_the_job():
    run = _launch("raise", timeout=120)  # the survivors would wait 60 s, then time out
    assert run.returncode != 0
    # the failing rank's traceback is forwarded only as far as the abort lets it (a loaded
    # machine may cut it short): the promise tested is a prompt, failing exit
    assert not run.stderr or "Traceback" in run.stderr or "on purpose" in run.stderr
    assert "collective returned" not in run.stdout


def test_world_size_one_without_mpi():
    assert not dist.launched_by_mpi()
    assert (dist.get_rank(), dist.get_world_size()) == (0, 1)
    code = ("import sys; sys.modules['mpi4py'] = None\n"  # as if the extra were not installed
            "import dongjing.distributed as d; d.init(); d.barrier()\n"
            "assert not d.is_available() and d.get_world_size() == 1, d.get_world_size()")
    env = {k: v for k, v in os.environ.items() if k != "PMI_SIZE"}
    env["PYTHONPATH"] = str(ROOT / "src")
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(dist.DistributedError, match="op must be one of"):
        dist.all_reduce(dj.ones(2), "min")
    with pytest.raises(dj.DTypeError, match="'mean' needs a floating point"):
        dist.all_reduce(dj.tensor([1, 2]), "mean")
    with pytest.raises(dist.DistributedError, match="src 3 is not a rank"):
        dist.broadcast(dj.ones(2), src=3)
    with pytest.raises(TypeError, match="dongjing Tensor"):
        dist.all_reduce(np.ones(2))
    with dj.Graph():
        x = dj.placeholder((2,))
        with pytest.raises(dist.DistributedError, match="functional.all_reduce"):
            dist.all_reduce(x)
        with pytest.raises(dj.DTypeError, match="all_reduce"):
            dist.functional.all_reduce(dj.placeholder((2,), dj.int64), "mean")


def test_all_reduce_op_is_never_folded_or_merged():
    with dj.Graph() as g:
        c = dj.constant(np.ones(3, np.float32))
        a = dist.functional.all_reduce(c)
        b = dist.functional.all_reduce(c)
        out = a + b
    sess = dj.Session(g, optimize=2)
    text = str(sess.optimized_graph(out))
    assert text.count("all_reduce(") == 2, text
    np.testing.assert_array_equal(sess.run(out), np.full(3, 2.0))


def test_buckets_keep_order_dtype_and_cap():
    specs = [((256,), np.float32), ((10,), np.float64), ((256,), np.float32),
             ((1000,), np.float32), ((3,), np.float64)]
    buckets = dist.plan_buckets(specs, cap_mb=2048 / 2**20)  # 2 KB: 512 float32
    assert [(b.dtype, b.indices) for b in buckets] == [
        (np.float32, [0, 2]), (np.float64, [1, 4]), (np.float32, [3])]
    assert buckets[0].offsets == [0, 256] and buckets[0].numel == 512
    with pytest.raises(ValueError, match="bucket_cap_mb"):
        dist.plan_buckets(specs, 0)


def test_ddp_reduces_onto_grad_a_plain_backward_left():
    dj.manual_seed(0)
    model = dj.nn.Linear(3, 2)
    ddp = dj.nn.parallel.DistributedDataParallel(model)
    model(dj.ones(4, 3)).sum().backward()  # the bare module: plain accumulation
    first = model.weight.grad
    ddp(dj.ones(4, 3)).sum().backward()  # through DDP: reduced (world size 1: same values)
    np.testing.assert_allclose(model.weight.grad.numpy(), 2 * first.numpy())


def test_bench_w4_step_runs_in_one_process():
    from bench.distributed import w4_step

    result = w4_step(batch=4, comm="overlap", steps=1)
    assert result["ranks"] == 1 and result["ms"] > 0



def test_a_collective_that_never_completes_times_out():
    class Stuck:  # an MPI request whose other ranks never answer
        def Test(self):
            return False

    world = dist.world.world
    old = world.timeout
    world.timeout = 0.05
    try:
        with pytest.raises(dist.DistributedError, match="no answer from the other ranks"):
            dist.world.wait(Stuck(), "all_reduce")
    finally:
        world.timeout = old


def test_no_sync_warns_when_a_traced_step_would_still_reduce():
    ddp = dj.nn.parallel.DistributedDataParallel(dj.nn.Linear(3, 1))

    @dj.jit
    def step(x):
        ddp(x).sum().backward()

    step(dj.ones(2, 3))
    with pytest.warns(UserWarning, match="trace the accumulating step"):
        with ddp.no_sync():
            step(dj.ones(2, 3))


class _FakeRequest:
    """Completes after `polls` tests, like a message that needs several progress calls."""

    def __init__(self, polls: int):
        self.left = polls

    def __bool__(self):  # mpi4py: a completed request becomes MPI_REQUEST_NULL (false)
        return self.left > 0


class _FakeMPI:
    IN_PLACE, SUM = object(), "sum"

    class Request:
        @staticmethod
        def Testall(requests):
            for r in requests:
                r.left -= 1
            return all(not r for r in requests)


class _FakeComm:
    def __init__(self, fail=False):
        self.started: list = []
        self.fail = fail

    def Iallreduce(self, sendbuf, recvbuf, op):
        if self.fail:
            raise RuntimeError("MPI said no")
        self.started.append(int(recvbuf[0]))
        return _FakeRequest(polls=3)


def test_buckets_start_in_bucket_order_only():
    from dongjing.distributed.overlap import Job

    comm = _FakeComm()
    job = Job(comm, _FakeMPI, 3)
    job.ready(1, np.array([1.0]))
    job.launch_ready()
    assert comm.started == []  # bucket 0 first on every rank, whatever fills first
    job.ready(0, np.array([0.0]))
    job.launch_ready()
    assert comm.started == [0, 1]
    assert job.advance()  # in flight
    job.ready(2, np.array([2.0]))
    while job.advance():
        pass
    assert comm.started == [0, 1, 2] and not any(job.requests)


def test_helper_thread_moves_reductions_while_the_caller_computes():
    import time

    from dongjing.distributed.overlap import Helper, Job

    helper, comm = Helper(interval=1e-4), _FakeComm()
    job = Job(comm, _FakeMPI, 2)
    helper.submit(job)
    job.ready(0, np.array([0.0]))
    job.ready(1, np.array([1.0]))
    helper.wake()
    deadline = time.monotonic() + 10
    while not (len(job.requests) == 2 and not any(job.requests)):  # no MPI call from here
        assert time.monotonic() < deadline, "the helper thread made no progress"
        time.sleep(1e-3)
    helper.retire(job)
    assert comm.started == [0, 1] and helper.jobs == []


def test_an_error_in_the_helper_thread_reaches_the_caller():
    import time

    from dongjing.distributed.overlap import Helper, Job

    helper = Helper(interval=1e-4)
    job = Job(_FakeComm(fail=True), _FakeMPI, 1)
    helper.submit(job)
    job.ready(0, np.array([0.0]))
    helper.wake()
    deadline = time.monotonic() + 10
    while job.error is None:
        assert time.monotonic() < deadline
        time.sleep(1e-3)
    with pytest.raises(RuntimeError, match="MPI said no"):
        helper.retire(job)
