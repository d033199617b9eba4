"""Checkpoints in data-parallel training: one rank writes, every rank waits for the file."""

from __future__ import annotations

from ..io import save as save_file
from .collectives import barrier
from .world import get_rank


def save(obj, path, rank: int = 0) -> None:
    """`dj.save(obj, path)` on rank `rank` only, then a barrier, so that no rank reads (or
    writes over) the file before it is complete. Every rank must call it."""
    if get_rank() == rank:
        save_file(obj, path)
    barrier()
