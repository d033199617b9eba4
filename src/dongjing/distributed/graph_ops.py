"""The `send` and `recv` ops the graph partitioner inserts at a cut edge (not in the op table:
users place nodes with `dj.device("rank:N")`; the partitioner writes these).

`send` is an effect (kept by dead-code elimination when fetched, gives None): it starts a
non-blocking send of a copy of its input, completed by `finish_sends()` after the run. `recv`
has no inputs and is impure (never folded or merged): it blocks until the value arrives, through
`world.wait`, so a rank that is gone is named. With one process, a send to rank 0 is kept in a
local mailbox that the matching recv takes it from.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import numpy as np

from ..core.registry import Kind, define
from . import p2p
from .world import ensure_init

_sender: p2p.Sender | None = None
_mailbox: dict[tuple[int, int], list] = {}  # (source, tag) -> arrays sent to this process
_local = threading.local()  # .offset: added to every tag (one range per micro-batch)


@contextmanager
def tag_offset(offset: int):
    """Add `offset` to the tags of the sends and recvs run inside (a micro-batched pipeline
    gives each micro-batch its own range of tags, so that its messages never meet another's)."""
    before = getattr(_local, "offset", 0)
    _local.offset = offset
    try:
        yield
    finally:
        _local.offset = before


def _comm():
    return ensure_init().comm


def _send_forward(xp, x, dest: int, tag: int):
    global _sender
    data = np.array(x, copy=True)  # the memory planner may reuse x's buffer before it leaves
    world = ensure_init()
    tag += getattr(_local, "offset", 0)
    if dest == world.rank:
        _mailbox.setdefault((world.rank, tag), []).append(data)
        return None
    if _sender is None or _sender.comm is not world.comm:
        _sender = p2p.Sender(world.comm)
    _sender.send(data, dest, tag, f"send to rank {dest} (tag {tag})")
    return None


def _recv_forward(xp, source: int, tag: int, shape, dtype):
    world = ensure_init()
    tag += getattr(_local, "offset", 0)
    if source == world.rank:
        return _mailbox[(source, tag)].pop(0)
    return p2p.recv(world.comm, source, tag, f"recv from rank {source} (tag {tag})")


send_op = define("send", forward=_send_forward, infer=lambda x, dest, tag: ((), None),
                 kind=Kind.EFFECT, table=False,
                 onnx_reason="a message to another process has no ONNX form")
recv_op = define("recv", forward=_recv_forward,
                 infer=lambda source, tag, shape, dtype: (shape, dtype), random=True, table=False,
                 onnx_reason="a message from another process has no ONNX form")


def finish_sends() -> None:
    """Wait until every value sent by the last run has left (its buffers may then go)."""
    if _sender is not None:
        _sender.finish("send")
