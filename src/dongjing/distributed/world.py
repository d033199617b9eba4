"""The process group of this run: every process started by `mpiexec`, or this process alone.

MPI is used only when the process was started by an MPI launcher (or mpi4py is already
loaded), so a script runs unchanged as one plain process with world size 1.
"""

from __future__ import annotations

import os
import sys
import time

from ..errors import DongjingError
from .liveness import Watch

# What MPI launchers put in the environment of the processes they start (MPICH/Hydra, Open
# MPI, PMIx, Slurm's PMI).
_LAUNCHER_VARIABLES = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK")


class DistributedError(DongjingError, RuntimeError):
    """A collective that cannot run: a timeout, a bad argument, MPI missing where needed."""


class _World:
    comm = None  # mpi4py's COMM_WORLD when running under MPI, else None
    mpi = None  # the mpi4py.MPI module when running under MPI
    rank = 0
    size = 1
    initialized = False
    timeout: float | None = None
    watch = None  # the heartbeat watch (liveness.Watch) with more than one rank


world = _World()


def is_available() -> bool:
    """Whether mpi4py can be imported (the `dist` extra is installed)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def launched_by_mpi() -> bool:
    """Whether this process was started by an MPI launcher (`mpiexec`, `mpirun`, `srun`)."""
    return "mpi4py.MPI" in sys.modules or any(v in os.environ for v in _LAUNCHER_VARIABLES)


DEFAULT_LIVENESS = 60.0


def init(timeout: float | None = None, liveness: float | None = DEFAULT_LIVENESS) -> None:
    """Join the process group: MPI's world under `mpiexec`, else a world of this process alone.

    Every rank must call it (collectives call it on first use). Faults end the job with an
    error naming the rank: under MPI an uncaught exception on any rank aborts the whole job
    (`MPI_Abort`); a rank that exits (or finishes) while others wait for it, or that sends no
    heartbeat for `liveness` seconds (stopped, hung outside Python), makes the waiting ranks
    raise a `DistributedError` (uncaught, it aborts the job in turn). `liveness=None` turns
    the heartbeats off. `timeout` (seconds) bounds every wait on a collective whatever the
    cause. Calling `init` again only changes the timeout.
    """
    if liveness is not None and float(liveness) <= 0:
        raise DistributedError(f"init: liveness must be a positive number of seconds or None, "
                               f"got {liveness!r}")
    world.timeout = None if timeout is None else float(timeout)
    if world.initialized:
        return
    if launched_by_mpi():
        try:
            from mpi4py import MPI
        except ImportError as exc:
            raise DistributedError(
                "this process was started by an MPI launcher but mpi4py is not installed: "
                "pip install 'dongjing[dist]' (mpi4py and mpich)"
            ) from exc
        world.mpi, world.comm = MPI, MPI.COMM_WORLD
        world.rank, world.size = world.comm.Get_rank(), world.comm.Get_size()
        if world.size > 1:
            _abort_on_uncaught_exception()
            if liveness is not None and world.watch is None:
                world.watch = Watch(world.comm, MPI, float(liveness))
    world.initialized = True


def _abort_on_uncaught_exception() -> None:
    """Print the traceback, then abort every rank (what `python -m mpi4py` does)."""
    previous = sys.excepthook

    def hook(kind, value, traceback):
        previous(kind, value, traceback)
        sys.stderr.flush()
        world.comm.Abort(1)

    sys.excepthook = hook


def ensure_init() -> _World:
    """The world, joined on first use."""
    if not world.initialized:
        init()
    return world


def is_initialized() -> bool:
    """Whether `init()` has run (collectives call it themselves on first use)."""
    return world.initialized


def get_rank() -> int:
    """This process's index in the group, 0 .. world size - 1."""
    return ensure_init().rank


def get_world_size() -> int:
    """How many processes train together (1 without `mpiexec`)."""
    return ensure_init().size


def get_communicator():
    """mpi4py's world communicator (None without MPI), for code that calls mpi4py itself."""
    return ensure_init().comm


CHECK_EVERY = 0.01  # seconds between looks at the heartbeats while waiting


def wait(request, what: str):
    """Complete a non-blocking MPI request, raising a `DistributedError` past the timeout or
    when a rank is known to be gone (see `liveness`)."""
    watch = world.watch
    if world.timeout is None and watch is None:
        return request.Wait()
    start = time.monotonic()
    deadline = None if world.timeout is None else start + world.timeout
    next_check = start + CHECK_EVERY
    spins = 0
    while not request.Test():
        now = time.monotonic()
        if deadline is not None and now > deadline:
            raise DistributedError(
                f"{what}: no answer from the other ranks within {world.timeout:g} s "
                f"(rank {world.rank} of {world.size}); a rank may have failed or be stuck"
            )
        if watch is not None and now >= next_check:
            problem = watch.check(what, world.size)
            if problem is not None:
                raise DistributedError(problem)
            next_check = now + CHECK_EVERY
        spins += 1
        if spins > 1000:
            time.sleep(1e-4)
    return None
