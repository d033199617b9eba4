"""Where a static program runs: on the device its state lives on, else where its inputs live.

A graph's Variables (and the Parameters a `dj.jit` trace captures) decide: a program reading
GPU Variables runs on that GPU, with NumPy feeds copied there (as TensorFlow copies feeds to
the device its graph is placed on). A graph without Variables runs where its feeds live. State
on two devices, or a GPU feed for a graph whose Variables are on the CPU, is a `DeviceError`
naming both: nothing is ever copied off the GPU behind the user's back. Constants are copied to
the device once, when the program is built.
"""

from __future__ import annotations

from typing import NamedTuple

from ..backends import backend_of, is_array, numpy_backend
from ..errors import DeviceError

_HOST = numpy_backend.array_types[0]  # the common case: a NumPy array, on the CPU


class Placement(NamedTuple):
    """A device a program runs on: its backend (None for NumPy, the CPU) and device index."""

    backend: object = None
    index: int | None = None

    def __str__(self) -> str:
        if self.backend is None:
            return "cpu"
        kind = self.backend.device_type
        return kind if self.index is None else f"{kind}:{self.index}"


CPU = Placement()


def of_array(array) -> Placement | None:
    """The device `array` lives on; None for host data (NumPy arrays, scalars, arrays of a
    backend that lives in host memory)."""
    if type(array) is _HOST or not is_array(array):
        return None
    backend = backend_of(array)
    if backend.device_type == "cpu":
        return None
    return Placement(backend, backend.index_of(array))


class DeviceFeedError(DeviceError):
    """A feed on a device for a program placed elsewhere (`Session.run` may move a program
    without Variables to that device instead)."""

    def __init__(self, message: str, placement: Placement):
        super().__init__(message)
        self.placement = placement


def _state_value(node):
    ref = node.attrs.get("ref")
    if ref is not None and node.op.name == "variable":
        return getattr(ref, "var_name", None) or node.name, ref._data
    return None, None


def of_state(nodes, what: str) -> Placement | None:
    """Where the Variables (and device constants) among graph `nodes` live: `CPU`, a device,
    or None when there are none. State on two devices raises DeviceError."""
    found, found_label = None, None
    for node in nodes:
        label, value = _state_value(node)
        if label is None:
            value = node.attrs.get("value") if node.op.name == "constant" else None
            if of_array(value) is None:  # a host constant goes wherever the program runs
                continue
            label = f"constant {node.name}"  # a device constant places it, as a Variable
        where = of_array(value) or CPU
        if found is None:
            found, found_label = where, label
        elif where != found:
            raise DeviceError(f"{what}: Variable {found_label!r} lives on {found} and "
                              f"{label!r} on {where}; move them to one device")
    return found


def of_arrays(arrays, what: str) -> Placement | None:
    """The one device among `arrays` (feeds, jit arguments); None when all are on the host."""
    found = None
    for array in arrays:
        where = of_array(array)
        if where is None:
            continue
        if found is None:
            found = where
        elif where != found:
            raise DeviceError(f"{what}: inputs live on {found} and on {where}; move them to "
                              "one device")
    return found


def decide(state: Placement | None, inputs: Placement | None, what: str) -> Placement:
    """The device a program runs on, from where its state and its inputs live."""
    if state is None:
        return inputs or CPU
    if inputs is not None and inputs != state:
        raise DeviceError(f"{what}: an input lives on {inputs} but the Variables it reads live "
                          f"on {state}; move the inputs (.to(...)) or the model to one device")
    return state
