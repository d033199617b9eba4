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

from ...devices.random import generator as _dj_generator
from ...errors import DongjingError

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
        self._cached = None  # ((id, length) of the variable list, [(var, array)])

    def array(self, var) -> np.ndarray:
        """This Session's array for `var` (a fresh, uninitialized one on first use)."""
        entry = self.values.get(id(var))
        if entry is None:
            entry = self.values[id(var)] = (var, np.zeros_like(var._data))
        return entry[1]

    def set(self, var, value) -> None:
        """Set this Session's value of `var` (restoring a checkpoint)."""
        array = self.array(var)
        array[...] = np.asarray(value, dtype=array.dtype)  # in place: installed pairs see it

    @contextmanager
    def installed(self, tf_variables: list):
        """Run the body with this Session's arrays in `tf_variables` and their is-initialized
        flags (the graph's list, which only grows), and with its random streams."""
        with _lock:
            pairs = self._pairs(tf_variables)
            homes = [var._data for var, _ in pairs]
            for var, array in pairs:
                var._data = array
            previous = getattr(_active, "state", None)
            _active.state = self
            try:
                yield
            finally:
                _active.state = previous
                for (var, array), home in zip(pairs, homes):
                    if var._data is not array:  # the run rebound it: keep what it holds now
                        self.values[id(var)] = (var, var._data)
                        self._cached = None
                    var._data = home

    def _pairs(self, tf_variables: list) -> list:
        key = (id(tf_variables), len(tf_variables))
        if self._cached is None or self._cached[0] != key:
            pairs = [(v, self.array(v)) for var in tf_variables for v in (var, var._flag)]
            self._cached = (key, pairs)
        return self._cached[1]
