"""Rank scripts for `tests/test_distributed_faults.py`, run under `mpiexec -n 2`: the last rank
fails in the way `argv[1]` names while the others wait for it in an all-reduce."""

from __future__ import annotations

import os
import signal
import sys
import time

import dongjing as dj
import dongjing.distributed as dist


def main(mode: str) -> None:
    if mode == "stop":
        dist.init(liveness=2.0)
    else:
        dist.init()  # the defaults: no timeout
    last = dist.get_rank() == dist.get_world_size() - 1
    dist.all_reduce(dj.ones(3))  # everyone alive and talking
    if mode == "finish":  # a clean end: ranks leave at different times, nobody waits
        for _ in range(20):
            dist.all_reduce(dj.ones(100))
        if last:
            time.sleep(1.0)  # rank 0 has exited by now; nobody waits, nothing is wrong
        print(f"rank {dist.get_rank()} finished", flush=True)
        return
    if last:
        if mode == "exit":
            print("the last rank leaves early", flush=True)
            return
        if mode == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        if mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
    start = time.monotonic()
    try:
        dist.all_reduce(dj.ones(3))
    except dist.DistributedError as exc:
        print(f"rank {dist.get_rank()} saw after {time.monotonic() - start:.1f} s: {exc}",
              flush=True)
        raise
    print("collective returned without the failed rank", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
