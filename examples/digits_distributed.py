"""Train the digits MLP data-parallel over MPI: each rank takes its share of every global batch,
DistributedDataParallel averages the gradients, rank 0 writes the checkpoint.

    mpiexec -n 2 .venv/bin/python examples/digits_distributed.py
    mpiexec -n 2 .venv/bin/python examples/digits_distributed.py --mode jit --epochs 5
    python examples/digits_distributed.py          # the same script as one process

Prints each rank's throughput and the final test accuracy (the same on every rank).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import dongjing as dj
import dongjing.distributed as dist
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing.nn.parallel import DistributedDataParallel
from dongjing.utils.data import DataLoader, DistributedSampler


def build(seed: int) -> nn.Module:
    """W1's MLP, 64-256-256-10 (DDP broadcasts rank 0's initial weights to the others)."""
    dj.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def share_cores(world: int) -> None:
    """Give each rank of this machine its share of the cores for BLAS (ranks of one machine
    competing with each other's BLAS threads run several times slower)."""
    local = int(os.environ.get("MPI_LOCALNRANKS", world))
    if local > 1:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # then set OMP_NUM_THREADS=1 in mpiexec's environment
            return
        threadpool_limits(max(1, (os.cpu_count() or 1) // local))


def make_step(model, opt, mode: str):
    """One training step on this rank's batch: (loss, correct predictions)."""

    def step(x, y):
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        return loss, (dj.argmax(logits, 1) == y).sum()

    return dj.jit(step) if mode == "jit" else step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64, help="global, over all ranks")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--mode", choices=("eager", "jit"), default="eager")
    parser.add_argument("--checkpoint", default=os.path.join(tempfile.gettempdir(),
                                                             "digits_distributed.safetensors"))
    args = parser.parse_args()

    dist.init()
    rank, world = dist.get_rank(), dist.get_world_size()
    share_cores(world)
    if args.batch_size % world:
        raise SystemExit(f"--batch-size {args.batch_size} does not split over {world} ranks")
    train, test = dj.data.datasets.digits()
    sampler = DistributedSampler(train, shuffle=True, seed=0, drop_last=True)
    loader = DataLoader(train, batch_size=args.batch_size // world, sampler=sampler,
                        drop_last=True)  # every rank: the same number of same-shape steps
    model = DistributedDataParallel(build(seed=0))
    opt = dj.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    step = make_step(model, opt, args.mode)

    seen, busy = 0, 0.0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total_loss, correct, count = dj.zeros(()), dj.zeros((), dtype=dj.int64), 0
        start = time.perf_counter()
        for x, y in loader:
            loss, right = step(x, y)
            total_loss, correct, count = total_loss + loss * len(y), correct + right, count + len(y)
        busy += time.perf_counter() - start
        seen += count
        stats = dj.stack([total_loss, correct.to(dj.float32), dj.tensor(float(count))])
        loss_sum, right_sum, n = dist.all_reduce(stats).numpy()  # over every rank's examples
        if rank == 0:
            print(f"epoch {epoch + 1:2d}  loss {loss_sum / n:.4f}  train accuracy "
                  f"{right_sum / n:.4f}  ({int(n)} examples on {world} ranks)", flush=True)

    x_test, y_test = test.tensors
    with dj.no_grad():
        accuracy = float(np.mean(model.eval()(x_test).numpy().argmax(1) == y_test.numpy()))
    dist.save(model.module.state_dict(), args.checkpoint)  # rank 0 writes; all wait
    dist.barrier()
    print(f"rank {rank}/{world}: {seen / busy:,.0f} examples/s over {seen} examples "
          f"({args.mode}), test accuracy {accuracy:.4f}", flush=True)
    if rank == 0:
        print(f"checkpoint: {args.checkpoint}")


if __name__ == "__main__":
    main()
