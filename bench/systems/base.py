"""What every system implements: a runner per workload kind, probed for its answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np


def host(array: Any) -> np.ndarray:
    """A NumPy copy of an array of any array module (CuPy's ``.get()`` copies to the host)."""
    if hasattr(array, "get") and not isinstance(array, np.ndarray):
        return array.get()
    return np.array(array)


class Unavailable(Exception):
    """The system cannot run here (library missing, API not implemented yet): skip it."""


@dataclass
class Probe:
    """One step's answers: the loss, the gradients, and (training workloads) the parameters
    after the update."""

    loss: float
    grads: dict[str, np.ndarray]
    params: dict[str, np.ndarray] = field(default_factory=dict)


class Runner(Protocol):
    """One system set up on one workload's data; ``step`` is what is timed."""

    note: str

    def step(self) -> None:
        """One step, returning with its results computed."""

    def probe(self) -> Probe:
        """One step like ``step``, returning its answers as NumPy arrays."""


@dataclass
class System:
    """A named way to run the workloads: ``build(kind, data)`` returns a Runner."""

    name: str
    build: object  # Callable[[str, data], Runner]
    compiled: bool = False  # report its first call as compile time
    floor: bool = False  # a lower bound (part of the work), timed but never checked
