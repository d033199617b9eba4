"""The process group of this run: every process started by `mpiexec`, or this process alone.

MPI is used only when the process was started by an MPI launcher (or mpi4py is already
loaded), so a script runs unchanged as one plain process with world size 1.
"""

from __future__ import annotations

import os
import sys
import time

from ..errors import DongjingError

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


def init(timeout: float | None = None) -> None:
    """Join the process group: MPI's world under `mpiexec`, else a world of this process alone.

    `timeout` (seconds) bounds every wait on a collective: past it a `DistributedError` is
    raised instead of waiting forever. Under MPI an uncaught exception on any rank aborts
    the whole job (`MPI_Abort`), so a failing rank never leaves the others hanging.
    Calling `init` again only changes the timeout.
    """
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


def wait(request, what: str):
    """Complete a non-blocking MPI request, raising a `DistributedError` past the timeout."""
    if world.timeout is None:
        return request.Wait()
    deadline = time.monotonic() + world.timeout
    spins = 0
    while not request.Test():
        if time.monotonic() > deadline:
            raise DistributedError(
                f"{what}: no answer from the other ranks within {world.timeout:g} s "
                f"(rank {world.rank} of {world.size}); a rank may have failed or be stuck"
            )
        spins += 1
        if spins > 1000:
            time.sleep(1e-4)
    return None
