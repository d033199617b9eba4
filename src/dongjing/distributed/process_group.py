"""PyTorch's `torch.distributed` names over dongjing's MPI world: `init_process_group`,
`destroy_process_group`, `ReduceOp`, `get_backend`, and collectives that take PyTorch's
`group=` and `async_op=` arguments (one group: the world)."""

from __future__ import annotations

import datetime
from typing import Literal, overload

from ..tensor import Tensor
from . import collectives
from .world import DistributedError, ensure_init, init, world


class ReduceOp:
    """Reductions by PyTorch's names; their values are the `op` strings `all_reduce` takes."""

    SUM = "sum"
    AVG = "mean"
    MAX = "max"


class Work:
    """What `async_op=True` returns: dongjing's collectives finish before returning, so
    `wait()` has nothing left to wait for."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


class _WorldGroup:
    """The one process group: every rank (`dj.distributed.group.WORLD`)."""

    WORLD = None


group = _WorldGroup()


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: datetime.timedelta | None = None, world_size: int = -1,
                       rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Join the world (MPI's under `mpiexec`, else this process alone). `backend` may be
    "mpi", "gloo" or "nccl" (all run over MPI here); `world_size` and `rank`, when given,
    must agree with the launcher's."""
    if backend is not None and str(backend).split(":")[0] not in ("mpi", "gloo", "nccl"):
        raise DistributedError(f"init_process_group: unknown backend {backend!r}; dongjing "
                               "runs every backend's collectives over MPI")
    seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout
    init(seconds)
    for name, given, actual in (("world_size", world_size, world.size),
                                ("rank", rank, world.rank)):
        if given not in (-1, None) and int(given) != actual:
            raise DistributedError(f"init_process_group: {name}={given}, but the MPI launcher "
                                   f"started this process with {name} {actual}")


def destroy_process_group(group=None) -> None:
    """Leave the process group; `init_process_group` may be called again afterwards."""
    _check_group(group, "destroy_process_group")
    world.initialized = False


def get_backend(group=None) -> str:
    """The name of the backend running the collectives: "mpi"."""
    _check_group(group, "get_backend")
    ensure_init()
    return "mpi"


@overload
def all_reduce(tensor: Tensor, op: str = ..., group: object = ...,
               async_op: Literal[False] = ...) -> Tensor: ...


@overload
def all_reduce(tensor: Tensor, op: str = ..., group: object = ..., *,
               async_op: Literal[True]) -> Work: ...


def all_reduce(tensor: Tensor, op: str = ReduceOp.SUM, group: object = None,
               async_op: bool = False) -> Tensor | Work:
    """Reduce `tensor` over all ranks in place (`op`: "sum", "mean", "max" or a `ReduceOp`);
    returns the tensor, or a `Work` with `async_op=True`."""
    _check_group(group, "all_reduce")
    out = collectives.all_reduce(tensor, op)
    return Work() if async_op else out


@overload
def broadcast(tensor: Tensor, src: int = ..., group: object = ...,
              async_op: Literal[False] = ...) -> Tensor: ...


@overload
def broadcast(tensor: Tensor, src: int = ..., group: object = ..., *,
              async_op: Literal[True]) -> Work: ...


def broadcast(tensor: Tensor, src: int = 0, group: object = None,
              async_op: bool = False) -> Tensor | Work:
    """Overwrite `tensor` with rank `src`'s value, in place; returns it (or a `Work`)."""
    _check_group(group, "broadcast")
    out = collectives.broadcast(tensor, src)
    return Work() if async_op else out


def barrier(group: object = None, async_op: bool = False,
            device_ids: list[int] | None = None) -> Work | None:
    """Wait until every rank reaches this point."""
    _check_group(group, "barrier")
    collectives.barrier()
    return Work() if async_op else None


def all_gather(tensor_list: list[Tensor] | Tensor, tensor: Tensor | None = None,
               group: None = None, async_op: bool = False) -> Tensor | Work | None:
    """PyTorch's `all_gather(tensor_list, tensor)`: fill `tensor_list` (one tensor per rank)
    with every rank's `tensor`. Called with one tensor, `all_gather(t)` returns every rank's
    `t` stacked in rank order (shape (world size, *t.shape))."""
    _check_group(group, "all_gather")
    if tensor is None:
        return collectives.all_gather(tensor_list)
    gathered = collectives.all_gather(tensor)
    if len(tensor_list) != gathered.shape[0]:
        raise DistributedError(f"all_gather: tensor_list holds {len(tensor_list)} tensors for "
                               f"a world of {gathered.shape[0]}")
    for target, value in zip(tensor_list, gathered):
        target.copy_(value)
    return Work() if async_op else None


def _check_group(group, what: str) -> None:
    if group is not None:
        raise DistributedError(f"{what}: dongjing has one process group, the world; pass "
                               "group=None")
