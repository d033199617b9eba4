"""One Chrome trace for every rank of an MPI job: each rank's recorded events, gathered on one
rank, one trace process per rank (named "rank N"), on a clock common to all ranks (each rank's
time since the barrier they all just left). A pipeline's bubbles are the gaps between the
`F`/`B` ranges of `dj.distributed.pipeline.Pipe`."""

from __future__ import annotations

import json

import numpy as np

from ..core import profiler_hooks as hooks
from ..distributed import p2p
from ..distributed.collectives import all_reduce, barrier
from ..distributed.world import DistributedError, ensure_init
from ..tensor import Tensor
from .chrome import trace_events

_TAG = 13


def export_ranks_trace(prof, path: str, to: int = 0) -> None:
    """Write the events `prof` (a finished `dj.profiler.profile`) recorded on every rank into
    one Chrome trace at `path` on rank `to`. Every rank must call it."""
    world = ensure_init()
    if not 0 <= to < world.size:
        raise DistributedError(f"export_ranks_trace: rank {to} is not in a world of {world.size}")
    events = prof.events()
    barrier()
    origin = hooks.clock()  # every rank's clock read as they leave one barrier
    # the time zero of the trace: the earliest event of any rank (no negative times)
    lead = np.array([max([origin - e.start_ns for e in events], default=0)], np.int64)
    if world.size > 1:
        all_reduce(Tensor._make(lead), "max")
    mine = trace_events(events, origin - int(lead[0]))
    for event in mine:
        event["pid"] = world.rank
    if world.rank != to:
        sender = p2p.Sender(world.comm)
        sender.send(np.frombuffer(json.dumps(mine, default=str).encode(), np.uint8), to, _TAG,
                    "export_ranks_trace")
        sender.finish("export_ranks_trace")
        return
    events = []
    for rank in range(world.size):
        if rank == to:
            events += mine
        else:
            events += json.loads(p2p.recv(world.comm, rank, _TAG, "export_ranks_trace").tobytes())
        events.append({"name": "process_name", "ph": "M", "pid": rank,
                       "args": {"name": f"rank {rank}"}})
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f, default=str)
