"""Checkpoints in data-parallel training: one rank writes, every rank waits for the file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..io import save as save_file
from .collectives import barrier
from .world import get_rank

if TYPE_CHECKING:
    import os
    from typing import BinaryIO


def save(obj: object, path: str | os.PathLike[str] | BinaryIO, rank: int = 0) -> None:
    """`dj.save(obj, path)` on rank `rank` only, then a barrier, so that no rank reads (or
    writes over) the file before it is complete. Every rank must call it."""
    if get_rank() == rank:
        save_file(obj, path)
    barrier()
