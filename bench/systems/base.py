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


def to_numpy(t: Any) -> np.ndarray:
    """A NumPy copy of a torch or dongjing tensor (from any device)."""
    return np.array(t.detach().cpu().numpy(), copy=True)


class EagerTraining:
    """A training step in a library with PyTorch's API (torch or dongjing): subclasses set
    ``params`` and ``names`` and define ``_forward_backward() -> loss`` and ``_update()``."""

    params: list[Any]
    names: list[str]

    def step(self) -> None:
        self._forward_backward()
        self._update()

    def probe(self) -> Probe:
        loss = self._forward_backward()
        grads = {n: to_numpy(p.grad) for n, p in zip(self.names, self.params)}
        self._update()
        return Probe(float(loss.item()), grads,
                     {n: to_numpy(p) for n, p in zip(self.names, self.params)})


class HandTraining:
    """A hand-written NumPy training step over a dict ``p`` of named parameters: subclasses
    define ``forward_backward() -> (loss, grads)`` and ``update(grads)``."""

    p: dict[str, np.ndarray]
    names: list[str]

    def step(self) -> None:
        self.update(self.forward_backward()[1])

    def probe(self) -> Probe:
        loss, grads = self.forward_backward()
        self.update(grads)
        return Probe(loss, {n: grads[n].copy() for n in self.names},
                     {n: self.p[n].copy() for n in self.names})
