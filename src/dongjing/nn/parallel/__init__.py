"""`dj.nn.parallel`: data-parallel training over MPI (see `dj.distributed`)."""

from .distributed import DistributedDataParallel
from .sync_batchnorm import SyncBatchNorm
