"""Which MPI rank new graph nodes are placed on: the scope `with dj.device("rank:1"):` (and
compat.v1's `tf.device("/job:worker/task:1")`) opens, one stack per thread. None: unplaced
(the partitioner decides, `dongjing/distributed/partition.py`)."""

from __future__ import annotations

import threading
from contextlib import contextmanager


class _Scope(threading.local):
    def __init__(self):
        self.ranks: list[int | None] = []


_scope = _Scope()


def current_rank() -> int | None:
    """The rank the innermost placement scope names, or None outside every scope."""
    return _scope.ranks[-1] if _scope.ranks else None


def push_rank(rank: int | None) -> None:
    _scope.ranks.append(rank)


def pop_rank() -> None:
    _scope.ranks.pop()


@contextmanager
def on_rank(rank: int | None):
    """Nodes created inside are placed on `rank` (None: leave the enclosing placement)."""
    push_rank(current_rank() if rank is None else rank)
    try:
        yield
    finally:
        pop_rank()
