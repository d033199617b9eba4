"""`dj.device`: where tensors live. Only the CPU exists until a GPU backend does; "cuda" and
"mps" raise a clear DeviceError instead of silently running on the CPU."""

from __future__ import annotations

from .errors import DeviceError


class device:  # noqa: N801 - PyTorch's spelling: dj.device("cpu")
    """A device: `dj.device("cpu")`, `dj.device("cpu", 0)` or `dj.device("cpu:0")`."""

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
            index = int(number)
        if name in ("cuda", "mps", "xpu", "hip"):
            raise DeviceError(
                f"device {type!r}: dongjing has no {name} backend yet (dj.cuda.is_available() "
                "is False); use 'cpu'"
            )
        if name != "cpu":
            raise DeviceError(f"unknown device {type!r}: dongjing runs on 'cpu'")
        self.type, self.index = name, None if index is None else int(index)

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


cpu = device("cpu")


def check_device(dev, what: str) -> device:
    """Validate a `device=` argument (None, a string or a dj.device); return the device."""
    if dev is None:
        return cpu
    if isinstance(dev, int) and not isinstance(dev, bool):
        raise DeviceError(f"{what}: device={dev} means a CUDA device, and dongjing has no CUDA "
                          "backend yet; use 'cpu'")
    if not isinstance(dev, (str, device)):
        raise TypeError(f"{what}: device must be a string or dj.device, got "
                        f"{type(dev).__name__}")
    return device(dev)


def is_device_like(value) -> bool:
    """Whether a positional argument of `.to(...)` names a device rather than a dtype."""
    if isinstance(value, device):
        return True
    if isinstance(value, str):
        return value.partition(":")[0] in ("cpu", "cuda", "mps", "xpu", "hip", "meta")
    return False


def parse_to(what: str, args: tuple, kwargs: dict):
    """The dtype asked for by PyTorch's `.to(...)` forms: `to(dtype)`, `to(device)`,
    `to(device, dtype)`, `to(other_tensor)`, `to(device=..., dtype=...)`; None when only a
    device (always the CPU) is named. Anything else raises."""
    from . import dtypes
    from .tensor import Tensor

    extra = set(kwargs) - {"dtype", "device", "non_blocking", "copy", "memory_format"}
    if extra:
        raise TypeError(f"{what}: unexpected keyword argument(s) {sorted(extra)}")
    if len(args) > 2:
        raise TypeError(f"{what}: takes at most 2 positional arguments, got {len(args)}")
    dev, dtype = kwargs.get("device"), kwargs.get("dtype")
    args = list(args)
    if args and isinstance(args[0], Tensor):
        if len(args) > 1:
            raise TypeError(f"{what}(tensor) takes no further positional argument")
        return args[0].dtype
    if args and (is_device_like(args[0]) or isinstance(args[0], int)
                 and not isinstance(args[0], bool)):
        dev = args.pop(0)
    if args:
        if dtype is not None:
            raise TypeError(f"{what}: dtype given twice")
        dtype = args.pop(0)
        if dtype is None:
            raise TypeError(f"{what}(None): expected a dtype, a device or a tensor")
    if args:
        raise TypeError(f"{what}: unexpected positional argument {args[0]!r}")
    check_device(dev, what)
    if dtype is None:
        if not kwargs and not dev:
            raise TypeError(f"{what}() needs a dtype, a device or a tensor")
        return None
    try:
        return dtypes.as_dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"{what}: {dtype!r} is neither a dtype nor a device") from exc
