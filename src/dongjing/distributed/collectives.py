"""Collectives on eager tensors: all_reduce, broadcast, all_gather, barrier.

They work in place on the tensor's own array through MPI's buffer protocol (a non-contiguous
view is staged through one contiguous copy). With world size 1 they return at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..dtypes import is_floating
from ..errors import DTypeError
from ..tensor import Tensor
from .world import DistributedError, ensure_init, wait

if TYPE_CHECKING:
    from collections.abc import Iterable

REDUCE_OPS = ("sum", "mean", "max")


def mpi_op(op: str, dtype: np.dtype):
    """The MPI reduction for `op` on arrays of `dtype` (bool: logical or for sum and max)."""
    world = ensure_init()
    if op not in REDUCE_OPS:
        raise DistributedError(f"all_reduce: op must be one of {REDUCE_OPS}, got {op!r}")
    if op == "mean" and not is_floating(dtype):
        raise DTypeError(f"all_reduce: op 'mean' needs a floating point tensor, got {dtype}")
    if dtype.kind not in "biuf":
        raise DTypeError(f"all_reduce: cannot reduce a tensor of dtype {dtype}")
    if world.mpi is None:
        return None
    if dtype.kind == "b":
        return world.mpi.LOR
    return world.mpi.MAX if op == "max" else world.mpi.SUM


def start_all_reduce(array: np.ndarray, op: str = "sum"):
    """Begin reducing the contiguous `array` in place across ranks; returns the MPI request
    (None with world size 1). For "mean" the caller divides by the world size after waiting."""
    mpi = mpi_op(op, array.dtype)
    world = ensure_init()
    if world.size == 1:
        return None
    return world.comm.Iallreduce(world.mpi.IN_PLACE, array, op=mpi)


def _eager(tensor, what: str) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{what}: expects a dongjing Tensor, got {type(tensor).__name__}")
    if tensor._node is not None:
        raise DistributedError(
            f"{what}: {tensor.name!r} is symbolic; in a graph use "
            "dj.distributed.functional.all_reduce (an op of the graph)"
        )
    return tensor


def _in_place(tensor: Tensor, run) -> Tensor:
    """Run `run(contiguous array)` on the tensor's data, writing back if it had to be staged."""
    data = tensor._data
    if data.flags.c_contiguous:
        run(data)
    else:
        staged = np.ascontiguousarray(data)
        run(staged)
        data[...] = staged
    tensor._version[0] += 1
    return tensor


def all_reduce(tensor: Tensor, op: str = "sum") -> Tensor:
    """Reduce `tensor` over all ranks, in place (PyTorch's convention); returns it.

    `op` is "sum", "mean" (floating tensors) or "max"; a bool tensor reduces by logical or.
    A symbolic tensor is refused: in graphs use `dj.distributed.functional.all_reduce`.
    """
    tensor = _eager(tensor, "all_reduce")
    world = ensure_init()
    mpi_op(op, tensor._data.dtype)  # validates op and dtype even with one rank

    def run(array):
        if world.size > 1:
            wait(start_all_reduce(array, op), "all_reduce")
            if op == "mean":
                np.divide(array, world.size, out=array)

    return _in_place(tensor, run)


def broadcast(tensor: Tensor, src: int = 0) -> Tensor:
    """Overwrite `tensor` on every rank with its value on rank `src`, in place; returns it."""
    tensor = _eager(tensor, "broadcast")
    world = ensure_init()
    if not 0 <= src < world.size:
        raise DistributedError(f"broadcast: src {src} is not a rank of a world of {world.size}")

    def run(array):
        if world.size > 1:
            wait(world.comm.Ibcast(array, root=src), "broadcast")

    return _in_place(tensor, run)


def all_gather(tensor: Tensor) -> Tensor:
    """Every rank's `tensor`, stacked in rank order: a new tensor of shape (world size, *shape).

    All ranks must pass tensors of the same shape and dtype.
    """
    tensor = _eager(tensor, "all_gather")
    world = ensure_init()
    data = np.ascontiguousarray(tensor._data)
    out = np.empty((world.size,) + data.shape, dtype=data.dtype)
    if world.size == 1:
        out[0] = data
    else:
        wait(world.comm.Iallgather(data, out), "all_gather")
    return Tensor._make(out)


def barrier() -> None:
    """Wait until every rank reaches this point."""
    world = ensure_init()
    if world.size > 1:
        wait(world.comm.Ibarrier(), "barrier")


def broadcast_parameters(tensors: Iterable[Tensor], src: int = 0) -> None:
    """Broadcast each tensor (e.g. `model.parameters()`, `model.buffers()`) from rank `src`."""
    for t in tensors:
        broadcast(t, src)
