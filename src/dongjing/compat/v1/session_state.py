"""What a TF1 Session owns: the values of the graph's tf.Variables (optimizer slots included)
and the streams of its random ops, installed into the graph's Variables while it runs.

TensorFlow 1.x keeps variable values in the Session, not in the graph: two Sessions on one graph
hold two independent sets of values, a new Session starts uninitialized, and every random op's
generator starts over in a new Session. dongjing's graphs read a Variable's `_data` at run time,
so a Session installs its own arrays there for the length of a run (one run at a time across
all TF sessions: the lock) and puts the graph's own arrays back afterwards.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import numpy as np

from ...errors import DongjingError
from ...random import generator as _dj_generator

_lock = threading.RLock()  # TF sessions' runs swap shared Variable objects: one at a time
_active = threading.local()  # .state: the SessionState whose values are installed now


class FailedPreconditionError(DongjingError, RuntimeError):
    """TF's error for reading a Variable this Session has not initialized."""


class Stream:
    """The random stream of one random op: seeded by (graph seed, op seed) as TF derives them,
    or unseeded (None: dongjing's generator, `dj.manual_seed`). Each Session draws from its own
    generator for it, started over from the seed."""

    __slots__ = ("seeds", "_shared")

    def __init__(self, seeds: tuple[int, int] | None):
        self.seeds = seeds
        self._shared = None

    def generator(self) -> np.random.Generator:
        """The generator this op draws from now: the running TF Session's own, else one shared
        by every other runner (a dj.Session on a TF graph)."""
        if self.seeds is None:
            return _dj_generator()
        state = getattr(_active, "state", None)
        if state is None:
            if self._shared is None:
                self._shared = np.random.default_rng(self.seeds)
            return self._shared
        entry = state.streams.get(id(self))
        if entry is None:
            entry = state.streams[id(self)] = (self, np.random.default_rng(self.seeds))
        return entry[1]

    def __repr__(self) -> str:
        return f"Stream(seeds={self.seeds})"


class SessionState:
    """One Session's variable values (`id(var) -> (var, array)`) and random streams."""

    def __init__(self):
        self.values: dict = {}
        self.streams: dict = {}

    def array(self, var) -> np.ndarray:
        """This Session's array for `var` (a fresh, uninitialized one on first use)."""
        entry = self.values.get(id(var))
        if entry is None:
            entry = self.values[id(var)] = (var, np.zeros_like(var._data))
        return entry[1]

    def set(self, var, value) -> None:
        """Set this Session's value of `var` (restoring a checkpoint)."""
        array = self.array(var)
        array[...] = np.asarray(value, dtype=array.dtype)

    @contextmanager
    def installed(self, variables):
        """Run the body with this Session's arrays in `variables` (and its random streams)."""
        with _lock:
            homes = [(var, var._data) for var in variables]
            for var, _ in homes:
                var._data = self.array(var)
            previous = getattr(_active, "state", None)
            _active.state = self
            try:
                yield
            finally:
                _active.state = previous
                for var, home in homes:
                    self.values[id(var)] = (var, var._data)  # the run may have rebound it
                    var._data = home
