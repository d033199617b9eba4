"""Moving tensors between devices (`Tensor.to(device)`, `.cuda()`, `.cpu()`, `Module.to`).

A move is recorded on the tape like any op (`ToCopyBackward0`, as PyTorch names it): the
gradient flows back to the source tensor's device. Moving a parameter in place
(`Module.to`) swaps its data and keeps the Parameter object.
"""

from __future__ import annotations

from .. import dtypes
from ..autograd.function import record
from ..autograd.grad_mode import state as _grad_state
from ..backends import backend_of
from ..core.registry import Kind, define
from ..devices.device import (
    Placement,
    check_device,
    device,
    device_of_array,
    is_device_like,
    move_array,
    placement,
)
from ..errors import DeviceError, DTypeError
from . import Tensor, ndarray


def _same(spec, **attrs):
    return spec.shape, spec.dtype


def _grad(g, x, device):
    return to_device(g, x.device)


_move = define("to_device", forward=lambda xp, x, device: x, infer=_same, grads=(_grad,),
               kind=Kind.OPAQUE, grad_name="ToCopyBackward0", onnx=None,
               onnx_reason="a device transfer is not an ONNX operator", table=False)


def to_device(x: Tensor, dev: device) -> Tensor:
    """`x` on device `dev`: `x` itself when it is there already, else a copy that is recorded
    on the tape when `x` requires gradients."""
    if x._node is not None:
        if dev.type == "cpu":
            return x
        raise DeviceError(f"Tensor.to({str(dev)!r}) of symbolic tensor {x._node.name!r}: graphs "
                          "are built on the CPU; move the eager tensors you feed or capture")
    data = x._data
    moved = move_array(data, dev)
    if moved is data:
        return x
    out = Tensor._make(moved)
    if x.requires_grad and _grad_state.grad_enabled:
        out.requires_grad = True
        record(_move, (x,), {"device": str(dev)}, out)
    return out


def move_in_place(t: Tensor, dev: device) -> None:
    """Put the data of leaf `t` (a Parameter, a buffer, a state Variable) and its `.grad` on
    `dev`, keeping the object (`Module.to`, optimizer state following its parameter)."""
    moved = move_array(t._data, dev)
    if moved is t._data:
        return
    t._data = moved
    t._version[0] += 1
    grad = t._grad
    if grad is not None and grad._node is None:
        t._grad = Tensor._make(move_array(grad._data, dev))


def same_device(a, b) -> bool:
    """Whether arrays `a` and `b` live on one device (cheap when their types match)."""
    if type(a) is type(b):
        backend = backend_of(a)
        return not backend.multi_device or backend.index_of(a) == backend.index_of(b)
    return device_of_array(a) == device_of_array(b)


def copy_into(target: Tensor, array) -> None:
    """Write `array` (of any backend) into leaf `target`'s data in place, moving it to the
    target's device and casting it to the target's dtype (state dict loading)."""
    data = target._data
    backend_of(data).copy_into(data, move_array(array, device_of_array(data)))
    target._version[0] += 1


def zeros_like_array(array):
    """Zeros shaped and typed like `array`, on its backend and device."""
    backend = backend_of(array)
    with backend.using(backend.index_of(array)):
        return backend.zeros(array.shape, array.dtype)


def placement_of(like: Tensor) -> Placement:
    """Where arrays made for `like` go (index arrays, masks, fills): the backend and device of
    its data; the default backend for a symbolic tensor (graph constants live on the host)."""
    data = like._data
    if like._node is not None or data is None:
        return placement(None, "placement_of")
    backend = backend_of(data)
    return Placement(backend, backend.index_of(data))


def constant_like(value, like: Tensor) -> Tensor:
    """A constant made on the host (a NumPy array or an eager CPU Tensor) as a tensor on the
    backend and device of `like`: the constants that ops and layers build for an eager tensor
    of another backend (masks, positions, index arrays). Unchanged for NumPy tensors and in
    graphs."""
    t = value if isinstance(value, Tensor) else Tensor._make(value)
    data = like._data
    if like._node is not None or t._node is not None or data is None or type(data) is ndarray:
        return t
    if t.requires_grad:  # a recorded move: the gradient flows back to `value`
        return to_device(t, device_of_array(data))
    moved = placement_of(like).put(t._data)
    return t if moved is t._data else Tensor._make(moved)


def parse_to(what: str, args: tuple, kwargs: dict):
    """The dtype asked for by `.to(...)` (see `parse_target`); None when only a device is named."""
    return parse_target(what, args, kwargs)[1]


def parse_target(what: str, args: tuple, kwargs: dict) -> tuple:
    """(device or None, dtype or None) asked for by PyTorch's `.to(...)` forms: `to(dtype)`,
    `to(device)`, `to(device, dtype)`, `to(other_tensor)`, `to(device=..., dtype=...)`.
    Anything else raises."""
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
        return args[0].device, args[0].dtype
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
    if dev is None and dtype is None and not kwargs:
        raise TypeError(f"{what}() needs a dtype, a device or a tensor")
    dev = None if dev is None else check_device(dev, what, placed=True)
    if dtype is None:
        return dev, None
    try:
        return dev, dtypes.as_dtype(dtype)
    except TypeError as exc:
        raise DTypeError(f"{what}: {dtype!r} is neither a dtype nor a device") from exc
