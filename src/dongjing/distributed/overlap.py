"""A helper thread that starts bucket all-reduces and keeps them moving while backward computes.

MPI moves a non-blocking collective along only inside MPI calls of the process that started
it (MPICH's own progress thread spins a core for the whole run). Backward spends most of its
time inside single BLAS calls of many milliseconds, which make no MPI calls, so a reduction
started from a gradient hook would otherwise sit still until the final wait. This thread,
awake only while one of its jobs has work, launches each job's ready buckets in bucket order
and tests the launched requests every `interval` seconds. MPI calls and NumPy's BLAS both
release the GIL, so the polling runs beside the compute.
"""

from __future__ import annotations

import queue
import threading

import numpy as np

INTERVAL = 2e-4  # seconds between polls: short next to a layer's backward, cheap to wake


class Job:
    """One backward's reductions on one communicator: flat buffers summed in place, started
    strictly in bucket order (every rank must start its collectives in the same order)."""

    def __init__(self, comm, mpi, count: int):
        self.comm = comm
        self.mpi = mpi
        self.buffers: list[np.ndarray | None] = [None] * count  # set when a bucket is ready
        self.requests: list = []  # one per launched bucket, in bucket order
        self.active = True  # the helper thread may make MPI calls for this job
        self.error: BaseException | None = None

    def ready(self, index: int, buffer: np.ndarray) -> None:
        """Bucket `index` holds its final local values: it may be reduced."""
        self.buffers[index] = buffer

    def launch_ready(self) -> None:
        """Start the ready buckets that every earlier bucket has been started before."""
        while len(self.requests) < len(self.buffers):
            buffer = self.buffers[len(self.requests)]
            if buffer is None:
                return
            self.requests.append(self.comm.Iallreduce(self.mpi.IN_PLACE, buffer,
                                                      op=self.mpi.SUM))

    def advance(self) -> bool:
        """Launch what can be launched and poll the rest; whether any reduction is in flight."""
        self.launch_ready()
        pending = [r for r in self.requests if r]  # completed requests become MPI_REQUEST_NULL
        if pending and not self.mpi.Request.Testall(pending):
            return True
        return False


class Helper:
    """The process's polling thread (started on first use, a daemon)."""

    def __init__(self, interval: float = INTERVAL):
        self.interval = interval
        self.jobs: list[Job] = []
        self.lock = threading.Lock()  # held while the thread makes MPI calls
        # a C-level queue, not an Event: waking and sleeping take the GIL only briefly, so
        # the thread rarely holds it when the main thread returns from NumPy and needs it
        self._signals: queue.SimpleQueue = queue.SimpleQueue()
        self.thread: threading.Thread | None = None

    def submit(self, job: Job) -> None:
        """Let the thread serve `job` (call `wake()` whenever a bucket becomes ready)."""
        self.jobs.append(job)
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name="dongjing-ddp-progress",
                                           daemon=True)
            self.thread.start()
        self.wake()

    def wake(self) -> None:
        """Have the thread look at its jobs now."""
        self._signals.put(None)

    def retire(self, job: Job) -> None:
        """Take `job` back: on return the thread makes no more MPI calls for it."""
        with self.lock:
            job.active = False
            self.jobs.remove(job)
        if job.error is not None:
            raise job.error

    def _run(self) -> None:
        signals = self._signals
        while True:
            while not signals.empty():  # taken before looking, so a later wake() is never lost
                signals.get_nowait()
            busy = False
            with self.lock:
                for job in list(self.jobs):
                    if job.active and job.error is None:
                        try:
                            busy |= job.advance()
                        except BaseException as exc:  # noqa: BLE001  (re-raised by retire)
                            job.error = exc
            try:
                signals.get(timeout=self.interval) if busy else signals.get()
            except queue.Empty:
                pass


_helper: Helper | None = None


def helper() -> Helper:
    """The process's polling thread, created on first use."""
    global _helper
    if _helper is None:
        _helper = Helper()
    return _helper
