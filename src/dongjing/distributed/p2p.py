"""Point-to-point transfer of arrays between two ranks over MPI: a small header (dtype and
shape) then the data, both with the same tag (MPI keeps messages of one sender, tag and
communicator in order). Sends are non-blocking; receives wait through `world.wait`, so a rank
that is gone is named instead of waited for."""

from __future__ import annotations

import numpy as np

from ..errors import DTypeError
from .world import DistributedError, wait

# The dtypes that travel; a header names one by its index here.
DTYPES = tuple(np.dtype(d) for d in ("float16", "float32", "float64", "int32", "int64", "bool",
                                      "uint8"))
MAX_NDIM = 8
_HEADER = 2 + MAX_NDIM  # dtype index, ndim, dims


class Sender:
    """Non-blocking sends whose buffers are kept alive until `finish()` has waited for them."""

    def __init__(self, comm):
        self.comm = comm
        self.pending: list = []  # (request, buffer) pairs

    def send(self, array: np.ndarray, dest: int, tag: int, what: str) -> None:
        """Start sending `array` to rank `dest` with `tag`."""
        array = np.asarray(array, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
        if array.dtype not in DTYPES:
            raise DTypeError(f"{what}: cannot send an array of dtype {array.dtype} between "
                             f"ranks; one of {[str(d) for d in DTYPES]}")
        if array.ndim > MAX_NDIM:
            raise DistributedError(f"{what}: cannot send an array of {array.ndim} dimensions "
                                   f"(at most {MAX_NDIM})")
        header = np.zeros(_HEADER, np.int64)
        header[0], header[1] = DTYPES.index(array.dtype), array.ndim
        header[2:2 + array.ndim] = array.shape
        for buffer in (header, array):
            self.pending.append((self.comm.Isend(buffer, dest=dest, tag=tag), buffer))

    def finish(self, what: str) -> None:
        """Wait until every started send has completed."""
        pending, self.pending = self.pending, []
        for request, _ in pending:
            wait(request, what)


def recv(comm, source: int, tag: int, what: str) -> np.ndarray:
    """The next array rank `source` sent with `tag` (blocking)."""
    header = np.empty(_HEADER, np.int64)
    wait(comm.Irecv(header, source=source, tag=tag), what)
    ndim = int(header[1])
    out = np.empty(tuple(int(d) for d in header[2:2 + ndim]), DTYPES[int(header[0])])
    wait(comm.Irecv(out, source=source, tag=tag), what)
    return out
