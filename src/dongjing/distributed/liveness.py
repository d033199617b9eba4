"""Heartbeats between ranks, so that a rank waiting on the others learns when one of them is
gone: stopped (SIGSTOP, a debugger, a hung C call), or finished and exited while the others
still wait for it. (A rank that raises aborts the job itself, and the launcher ends the job
when a process is killed.)

Every rank runs a daemon thread that sends a small message to every other rank every
`interval` seconds on a communicator of its own (a duplicate of the world's) and records when
each rank was last heard from. A rank that exits says so first (an `atexit` hook). `wait()`
asks `check()` while it waits and raises a `DistributedError` naming the rank.
"""

from __future__ import annotations

import atexit
import os
import threading
import time

import numpy as np

_TAG = 7321  # any tag: the communicator is this module's own
_ALIVE, _EXITING = 1, 2
# After a rank says it is exiting, a waiting rank keeps testing its request this long before
# giving up: the exiting rank may have completed its side of the very collective this rank
# still waits for (the notice travels on another communicator, so it may overtake the data).
EXIT_GRACE = 2.0


class Watch:
    """This process's view of which other ranks are alive."""

    def __init__(self, comm_world, mpi, timeout: float):
        self.mpi = mpi
        self.rank = comm_world.Get_rank()
        self.timeout = float(timeout)
        self.interval = min(1.0, max(0.02, self.timeout / 10))
        self.peers = [r for r in range(comm_world.Get_size()) if r != self.rank]
        start = time.monotonic()
        self.last_seen = dict.fromkeys(self.peers, start)
        self.exited: dict[int, float] = {}  # rank -> when its exit notice arrived
        self.broken: dict[int, str] = {}  # rank -> the MPI error talking to it raised
        self.comm, self._dup = comm_world.Idup()  # non-blocking: init never waits on others
        self._ready = False  # the duplicate is complete (set by the thread)
        self._pid = os.getpid()
        self._stop = threading.Event()
        self._lock = threading.Lock()  # the thread's MPI calls vs the exit notice
        self._thread = threading.Thread(target=self._run, name="dongjing-heartbeat",
                                        daemon=True)
        self._thread.start()
        atexit.register(self.close)

    # the thread
    def _run(self) -> None:
        if not self._complete_dup(until=float("inf")):
            return
        alive = np.array([_ALIVE], np.int32)
        buffers = {p: np.zeros(1, np.int32) for p in self.peers}
        self._recvs = {p: self.comm.Irecv(buffers[p], source=p, tag=_TAG) for p in self.peers}
        self._sends: dict[int, object] = dict.fromkeys(self.peers)
        last_loop = time.monotonic()
        while True:
            with self._lock:
                if self._stop.is_set():
                    return
                now = time.monotonic()
                if now - last_loop > self.timeout / 2:
                    # this process was not scheduled for a while: the silence is ours, not theirs
                    self.last_seen = dict.fromkeys(self.peers, now)
                last_loop = now
                for p in self.peers:
                    if p in self.exited or p in self.broken:
                        continue
                    try:
                        self._beat(p, alive, buffers[p], now)
                    except self.mpi.Exception as exc:
                        self.broken[p] = str(exc)
            self._stop.wait(self.interval)

    def _complete_dup(self, until: float) -> bool:
        """Poll the duplicate until it completes (every rank polls briefly, so it completes in
        milliseconds once all have called init), the thread is stopped, or `until`."""
        while not self._ready:
            if self._dup.Test():
                self._ready = True
            elif self._stop.wait(1e-3) or time.monotonic() > until:
                return False
        return True

    def _beat(self, peer: int, alive, buffer, now: float) -> None:
        send = self._sends[peer]
        if send is None or send.Test():  # one message in flight per peer at most
            self._sends[peer] = self.comm.Isend(alive, dest=peer, tag=_TAG)
        while self._recvs[peer].Test():  # drain what arrived since the last round
            self.last_seen[peer] = now
            if buffer[0] == _EXITING:
                self.exited[peer] = now
                return
            self._recvs[peer] = self.comm.Irecv(buffer, source=peer, tag=_TAG)

    # the waiting side
    def check(self, what: str, size: int) -> str | None:
        """Why the wait for `what` cannot complete (a rank is gone), or None."""
        now = time.monotonic()
        for p, when in list(self.exited.items()):
            if now - when > EXIT_GRACE:
                return (f"{what}: rank {p} exited while rank {self.rank} of {size} waits for it "
                        "(did it finish early, or skip a collective the others ran?)")
        for p, message in list(self.broken.items()):
            return f"{what}: rank {p} is unreachable (rank {self.rank} of {size}): {message}"
        for p, seen in list(self.last_seen.items()):
            if p not in self.exited and now - seen > self.timeout:
                return (f"{what}: rank {p} has not answered for {now - seen:.1f} s (the limit "
                        f"is {self.timeout:g} s; rank {self.rank} of {size} waits for it): "
                        "it has stopped, hangs outside Python, or is gone")
        return None

    # leaving
    def close(self) -> None:
        """Stop the thread and tell every rank that this one is exiting (at interpreter exit,
        before mpi4py finalizes MPI)."""
        if self._stop.is_set() or os.getpid() != self._pid:  # a forked child: not a rank
            return
        with self._lock:
            self._stop.set()
        self._thread.join(timeout=5)
        self._stop.clear()  # let _complete_dup poll: this rank may exit right after init
        ready = self._complete_dup(until=time.monotonic() + 1.0)
        self._stop.set()
        if not ready:
            return
        notice = np.array([_EXITING], np.int32)
        sends = []
        for p in self.peers:
            try:
                sends.append(self.comm.Isend(notice, dest=p, tag=_TAG))
            except self.mpi.Exception:
                pass
        deadline = time.monotonic() + 1.0
        while sends and time.monotonic() < deadline:
            sends = [s for s in sends if not s.Test()]
            time.sleep(1e-3)
        for request in getattr(self, "_recvs", {}).values():
            try:
                request.Cancel()
                request.Wait()
            except self.mpi.Exception:
                pass
        if not sends:  # the notices left; what is still in flight would block the free
            self.comm.Free()
