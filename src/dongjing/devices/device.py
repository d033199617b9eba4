"""`dj.device`: where tensors live. A device type maps to an array backend: "cpu" to NumPy,
"cuda" to CuPy when it imports and sees a GPU (`dongjing.backends.cupy`). A device type without
a backend raises a clear DeviceError instead of silently running on the CPU."""

from __future__ import annotations

from typing import NamedTuple

from ..backends import backend_of, default_backend, for_device_type, is_array
from ..backends.base import default_backend as _default_backend
from ..backends.cupy import unavailable_reason
from ..core.placement_scope import pop_rank, push_rank
from ..core.validation import allocation_failed
from ..errors import DeviceError, DTypeError
from .random import generator_for

_ACCELERATORS = ("cuda", "mps", "xpu", "hip")


class HostConversionError(DeviceError, TypeError):
    """A device tensor asked for as a NumPy array (`.numpy()`): copy it with `.cpu()` first."""


class device:  # noqa: N801 - PyTorch's spelling: dj.device("cpu")
    """A device: `dj.device("cpu")`, `dj.device("cuda")`, `dj.device("cuda:1")`,
    `dj.device("cuda", 0)`. An accelerator type is accepted only when its backend is loaded
    (and its index is below the device count)."""

    __slots__ = ("type", "index")

    def __init__(self, type: str | device, index: int | None = None):
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if not isinstance(type, str):
            raise TypeError(f"dj.device: expected a string such as 'cpu', got "
                            f"{type.__class__.__name__}")
        name, _, number = type.partition(":")
        if number:
            if index is not None:
                raise ValueError(f"dj.device: index given twice ({type!r} and {index})")
            if not number.isdigit():
                raise DeviceError(f"invalid device string {type!r}: the index after ':' must "
                                  "be a non-negative integer")
            index = int(number)
        if index is not None and (isinstance(index, bool) or int(index) < 0):
            raise DeviceError(f"dj.device({type!r}, {index!r}): the index must be a "
                              "non-negative integer")
        if name in _ACCELERATORS:
            _check_accelerator(type, name, index)
        elif name == "rank":
            if index is None:
                raise DeviceError(f"device {type!r}: name the MPI rank, e.g. 'rank:1'")
        elif name != "cpu":
            raise DeviceError(f"unknown device {type!r}: dongjing runs on 'cpu' and 'cuda' "
                              "(and places graph nodes on MPI ranks with 'rank:N')")
        self.type, self.index = name, None if index is None else int(index)

    def __enter__(self) -> device:
        """`with dj.device("rank:1"):` places the graph nodes built inside on MPI rank 1
        (docs/distributed.md, "Placing a graph on ranks")."""
        if self.type != "rank":
            raise DeviceError(f"with dj.device({str(self)!r}): only a rank placement "
                              "('rank:N') opens a scope; create tensors with device=... instead")
        push_rank(self.index)
        return self

    def __exit__(self, *exc) -> bool:
        pop_rank()
        return False

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        extra = "" if self.index is None else f", index={self.index}"
        return f"device(type={self.type!r}{extra})"


def _check_accelerator(text: str, name: str, index) -> None:
    backend = for_device_type(name)
    if backend is None:
        why = ""
        if name == "cuda":
            why = f": {unavailable_reason()}; install dongjing[gpu] on a machine with a GPU"
        raise DeviceError(f"device {text!r}: dongjing has no {name} backend here "
                          f"(dj.cuda.is_available() is False{why}); use 'cpu'")
    if index is not None and int(index) >= backend.device_count():
        raise DeviceError(f"device {text!r}: index {index} is out of range, there are "
                          f"{backend.device_count()} {name} device(s)")


def _known(type_: str, index: int | None) -> device:
    """A device without validation (the type and index come from a live array)."""
    d = object.__new__(device)
    d.type, d.index = type_, index
    return d


cpu = device("cpu")


def check_device(dev, what: str, *, placed: bool = False) -> device:
    """Validate a `device=` argument (None, a string, an int for a CUDA index or a dj.device);
    return the device. Unless the caller places its result there (`placed=True`), a device
    other than the CPU raises: create on the CPU, then move with `.to(device)`."""
    if dev is None:
        return cpu
    if isinstance(dev, int) and not isinstance(dev, bool):
        if for_device_type("cuda") is None:
            raise DeviceError(f"{what}: device={dev} means a CUDA device, and dongjing has no "
                              "CUDA backend here (dj.cuda.is_available() is False); use 'cpu'")
        dev = device("cuda", dev)
    if not isinstance(dev, (str, device)):
        raise TypeError(f"{what}: device must be a string or dj.device, got "
                        f"{type(dev).__name__}")
    dev = device(dev)
    if dev.type != "cpu" and not placed:
        raise DeviceError(f"{what}: device={str(dev)!r} is not supported here; build it on the "
                          f"CPU, then move it with .to({str(dev)!r})")
    return dev


class Placement(NamedTuple):
    """A backend and a device index of it: where a factory creates its array."""

    backend: object
    index: int | None
    func: str = ""  # the factory creating through it ("dj.zeros"), named in its errors

    def call(self, name: str, *args, **kwargs):
        """`backend.xp.<name>(*args, **kwargs)` run on this device."""
        fn = getattr(self.backend.xp, name)
        try:
            if self.index is None:
                return fn(*args, **kwargs)
            with self.backend.using(self.index):
                return fn(*args, **kwargs)
        except (MemoryError, ValueError) as exc:
            _raise_allocation(self.func, name, args, exc)
            raise

    def draw(self, name: str, *args, **kwargs):
        """A draw `name` of dongjing's seeded generator for this backend, on this device."""

        try:
            with self.backend.using(self.index):
                return getattr(generator_for(self.backend), name)(*args, **kwargs)
        except (MemoryError, ValueError) as exc:
            _raise_allocation(self.func, name, args + tuple(kwargs.values()), exc)
            raise


    def put(self, array):
        """`array` (of any backend) moved here."""
        return self.backend.move(array, self.index)


_DEFAULT: list = [None]  # the device set by dj.set_default_device (None: the CPU)


def set_default_device(dev) -> None:
    """PyTorch's `torch.set_default_device`: where factories without `device=` create their
    tensors from now on ("cpu", "cuda", "cuda:1", a dj.device; None resets to the CPU)."""
    if dev is None:
        _DEFAULT[0] = None
        return
    dev = check_device(dev, "dj.set_default_device", placed=True)
    if dev.type != "cpu" and for_device_type(dev.type) is None:
        raise DeviceError(f"dj.set_default_device: no dongjing backend for {str(dev)!r} here")
    _DEFAULT[0] = None if dev.type == "cpu" else dev


def get_default_device() -> device:
    """The device factories use when not given one (see `set_default_device`)."""
    return cpu if _DEFAULT[0] is None else _DEFAULT[0]


def placement(dev, what: str) -> Placement:
    """Where a factory's `device=` argument puts its result (None: the default device)."""
    if dev is None:  # the common case first
        if _DEFAULT[0] is None:
            return Placement(_default_backend(), None, what)
        dev = _DEFAULT[0]
    dev = check_device(dev, what, placed=True)
    if dev.type == "cpu":
        return Placement(default_backend(), None, what)
    backend = for_device_type(dev.type)
    return Placement(backend, backend.current_index() if dev.index is None else dev.index, what)


def device_of_array(array) -> device:
    """The device an array of any registered backend lives on."""
    backend = backend_of(array)
    if backend.device_type == "cpu":
        return cpu
    return _known(backend.device_type, backend.index_of(array))


def is_device_like(value) -> bool:
    """Whether a positional argument of `.to(...)` names a device rather than a dtype."""
    if isinstance(value, device):
        return True
    if isinstance(value, str):
        return value.partition(":")[0] in ("cpu", "cuda", "mps", "xpu", "hip", "meta")
    return False


def host_array(data, what: str):
    """The NumPy array of a CPU backend's `data`; a device array raises as PyTorch does."""
    where = device_of_array(data)
    if where.type != "cpu":
        raise HostConversionError(f"{what}: can't convert {where} device type tensor to numpy. "
                                  "Use Tensor.cpu() to copy the tensor to host memory first.")
    return backend_of(data).to_numpy(data)


def _raise_allocation(func: str, name: str, args: tuple, exc: Exception) -> None:
    """Raise OutOfMemoryError (from None) naming `func` (the factory; else the backend's
    `name`) when `exc` is an allocation failure."""
    shapes = [a for a in args if isinstance(a, tuple)]
    what = f"an array of shape {shapes[0]}" if shapes else f"the array of {name}{args}"
    found = allocation_failed(func or f"dj.{name}", what, exc)
    if found is not None:
        raise found from None


def foreign_array(data, want) -> tuple:
    """(array, on a device) for an array of another backend: a copy on its own device
    (`nn.Parameter(cuda_tensor)`), or its NumPy data for a CPU backend; else (data, False)."""
    if not is_array(data):
        return data, False
    backend = backend_of(data)
    if backend.device_type == "cpu":
        return backend.to_numpy(data), False
    if data.dtype.kind not in "biuf":
        raise DTypeError(f"cannot make a tensor of dtype {data.dtype}: only numbers and bools")
    with backend.using(backend.index_of(data)):
        return backend.array(data, dtype=want), True


def move_array(array, dev: device):
    """`array` (of any backend) on device `dev`: itself when it is there, else a copy."""
    return placement(dev, "Tensor.to").put(array)
