"""`dj.distributed`: data, pipeline and tensor parallelism over MPI (the `dist` extra: mpi4py +
mpich), and the planner behind `dj.Session(g, distribute="auto")`.

Start a script with `mpiexec -n 4 python train.py`; without `mpiexec` it runs as one process
(world size 1) and every collective returns at once.
"""

from . import functional, optim, pipeline
from .buckets import Bucket, plan_buckets
from .checkpoint import save
from .collectives import broadcast_parameters
from .cost_model import CostModel
from .gradients import all_reduce_gradients
from .plan import Plan
from .process_group import (
    ReduceOp,
    Work,
    all_gather,
    all_reduce,
    barrier,
    broadcast,
    destroy_process_group,
    get_backend,
    group,
    init_process_group,
)
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
