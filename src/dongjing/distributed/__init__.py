"""`dj.distributed`: data parallelism over MPI (the `dist` extra: mpi4py + mpich).

Start a script with `mpiexec -n 4 python train.py`; without `mpiexec` it runs as one process
(world size 1) and every collective returns at once.
"""

from . import functional
from .buckets import Bucket, plan_buckets
from .checkpoint import save
from .collectives import all_gather, all_reduce, barrier, broadcast, broadcast_parameters
from .gradients import all_reduce_gradients
from .world import (
    DistributedError,
    get_communicator,
    get_rank,
    get_world_size,
    init,
    is_available,
    is_initialized,
    launched_by_mpi,
)
