"""Static programs run on the CPU: a device (GPU) array reaching one raises a clear DeviceError.

The compiler's generated code and the interpreter's buffers are NumPy's; CUDA kernels for
compiled graphs are not built yet. Rather than copy device data to the host behind the user's
back, Session.run and dj.jit refuse device feeds, device Variables and device constants.
"""

from __future__ import annotations

from ..backends import backend_of, numpy_backend
from ..errors import DeviceError

_HINT = ("compiled GPU graphs are not built yet (dongjing's static programs run on the CPU); "
         "run the model eagerly on the GPU, or move its inputs and parameters with .cpu()")
_HOST = numpy_backend.array_types[0]  # the programs' own arrays: the common case, on the CPU


def device_name(array) -> str | None:
    """The device of `array` when it is not the CPU, else None (also for non-arrays)."""
    if type(array) is _HOST:
        return None
    backend = backend_of(array, None)
    if backend is None or backend.device_type == "cpu":
        return None
    from ..device import device_of_array

    return str(device_of_array(array))


def refuse_device_arrays(arrays, what: str) -> None:
    """Raise DeviceError when one of `arrays` (feeds, jit arguments) lives on a device."""
    for a in arrays:
        if type(a) is not _HOST:
            where = device_name(a)
            if where is not None:
                raise DeviceError(f"{what}: an input lives on {where}; {_HINT}")


def refuse_device_state(nodes, what: str) -> None:
    """Raise DeviceError when a Variable or constant among graph `nodes` lives on a device."""
    for node in nodes:
        ref = node.attrs.get("ref")
        value = getattr(ref, "_data", None) if ref is not None else node.attrs.get("value")
        where = device_name(value)
        if where is not None:
            label = getattr(ref, "var_name", None) or node.name
            raise DeviceError(f"{what}: {node.op.name} {label!r} lives on {where}; {_HINT}")
