"""Creating tensors: from data, constant fills, ranges, random draws (PyTorch names)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes, ops
from ..backends import backend_of, is_array
from ..core.memory_format import check_layout, check_memory_format, preserve_format, strided
from ..core.validation import check_int, check_number, check_size
from ..devices.device import placement
from ..devices.random import generator  # noqa: F401 - kept for factories added beside these
from ..errors import ArgumentError, DongjingError
from . import Tensor
from .conversion import to_array

if TYPE_CHECKING:
    from ..types import DeviceLike, DTypeLike, Number, Shape, TensorLike


def tensor(data: TensorLike, dtype: DTypeLike | None = None, device: DeviceLike | None = None,
           requires_grad: bool = False) -> Tensor:
    """A new tensor from a scalar, a (nested) list or an array (copied).

    Python floats give float32, Python ints int64, bools bool; `dtype=` overrides. `device`
    ("cpu", "cuda", "cuda:1", a dj.device) puts it there; a tensor on a device stays there when
    `device` is None.
    """
    where = placement(_device_of(data, device), "dj.tensor")
    try:
        t = Tensor._make(where.put(_copied(data, dtype, device is None)))
    except DongjingError as exc:  # an unsupported dtype: say which argument it came from
        raise type(exc)(f"dj.tensor: argument 'data': {exc}") from None
    except (ValueError, TypeError) as exc:  # ragged nesting, strings, objects
        raise ArgumentError(f"dj.tensor: argument 'data': {exc}") from None
    if requires_grad:
        t.requires_grad_(True)
    return t


def _copied(data, dtype, keep_device: bool):
    """A new array of `data`: on its own device when it is a device array and `keep_device`."""
    raw = data._value("dj.tensor()") if isinstance(data, Tensor) else data
    if type(raw) is np.ndarray or not is_array(raw):
        return to_array(data, dtype)
    backend = backend_of(raw)
    if backend.device_type == "cpu" or not keep_device:
        return to_array(backend.to_numpy(raw), dtype)
    with backend.using(backend.index_of(raw)):
        return backend.array(raw, dtype=None if dtype is None else dtypes.as_dtype(dtype))


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with `array`."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    to_array(array[:0] if array.ndim else array.reshape(1)[:0])  # dtype check only
    return Tensor._make(array)


def _shape(size, func: str) -> tuple:
    return check_size(func, size)


def _sized(args: tuple, size, func: str) -> tuple:
    """The shape given as ints or one tuple (`dj.rand(2, 3)`), or as `size=` (PyTorch takes
    both: `torch.rand(size=(2, 3))`), not both."""
    if size is None:
        return _shape(args, func)
    if args:
        raise ArgumentError(f"{func}: the size is given twice (as positional arguments "
                            f"{args} and as size={size!r})")
    return _shape((size,) if isinstance(size, int) else tuple(size), func)


def _make(array, requires_grad):
    t = Tensor._make(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _float(dtype):
    return dtypes.as_dtype(dtype) if dtype is not None else dtypes.default_float


def zeros(*args: int | Sequence[int], size: Sequence[int] | None = None,
          dtype: DTypeLike | None = None, device: DeviceLike | None = None,
          requires_grad: bool = False) -> Tensor:
    """A tensor of shape `size` (ints, or one tuple of them, or `size=`) filled with zeros."""
    where = placement(device, "dj.zeros")
    return _make(where.call("zeros", _sized(args, size, "dj.zeros"), _float(dtype)), requires_grad)


def ones(*args: int | Sequence[int], size: Sequence[int] | None = None,
         dtype: DTypeLike | None = None, device: DeviceLike | None = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of shape `size` (ints, or one tuple of them, or `size=`) filled with ones."""
    where = placement(device, "dj.ones")
    return _make(where.call("ones", _sized(args, size, "dj.ones"), _float(dtype)), requires_grad)


def empty(*args: int | Sequence[int], size: Sequence[int] | None = None,
          dtype: DTypeLike | None = None, device: DeviceLike | None = None,
          requires_grad: bool = False) -> Tensor:
    """A tensor of shape `size` (ints, or one tuple of them, or `size=`) uninitialised."""
    where = placement(device, "dj.empty")
    return _make(where.call("empty", _sized(args, size, "dj.empty"), _float(dtype)), requires_grad)


def full(size: Shape, fill_value: Number | np.generic, dtype: DTypeLike | None = None,
         device: DeviceLike | None = None, requires_grad: bool = False) -> Tensor:
    """A tensor of shape `size` filled with the number `fill_value`."""
    where = placement(device, "dj.full")
    check_number("dj.full", "fill_value", fill_value)
    if dtype is None:
        dtype = (np.asarray(fill_value).dtype if isinstance(fill_value, (np.generic, np.ndarray))
                 else dtypes.scalar_dtype(fill_value, None))
    size = (size,) if not isinstance(size, (tuple, list)) else size
    array = where.call("full", _shape(size, "dj.full"), fill_value, dtypes.as_dtype(dtype))
    return _make(array, requires_grad)


def zeros_like(input: Tensor | np.ndarray, dtype: DTypeLike | None = None, *,
               layout: object = None, device: DeviceLike | None = None,
               requires_grad: bool = False, memory_format: object = preserve_format) -> Tensor:
    """Zeros with `input`'s shape, dtype and device unless given (row-major; `layout` strided
    only)."""
    _check_like("dj.zeros_like", layout, memory_format)
    placement(device, "dj.zeros_like")
    x = input

    if isinstance(x, Tensor) and x._node is not None:
        return ops.zeros_like(x, dtype)
    return zeros(np.shape(x), dtype=dtype or x.dtype, device=_device_of(x, device),
                 requires_grad=requires_grad)


def ones_like(input: Tensor | np.ndarray, dtype: DTypeLike | None = None, *,
              layout: object = None, device: DeviceLike | None = None,
              requires_grad: bool = False, memory_format: object = preserve_format) -> Tensor:
    """Ones with `input`'s shape, dtype and device unless given (row-major; `layout` strided
    only)."""
    _check_like("dj.ones_like", layout, memory_format)
    placement(device, "dj.ones_like")
    x = input

    if isinstance(x, Tensor) and x._node is not None:
        return ops.ones_like(x, dtype)
    return ones(np.shape(x), dtype=dtype or x.dtype, device=_device_of(x, device),
                requires_grad=requires_grad)


def _device_of(x, device):
    """`device` when given, else the device of `x` (an eager Tensor) or None (the CPU)."""
    if device is not None or not isinstance(x, Tensor) or x._node is not None:
        return device
    return x.device


def full_like(input: Tensor, fill_value: Number, *, dtype: DTypeLike | None = None,
              layout: object = strided, device: DeviceLike | None = None,
              requires_grad: bool = False, memory_format: object = preserve_format) -> Tensor:
    """`fill_value` with `input`'s shape, dtype and device unless given (row-major; `layout`
    strided only)."""
    _check_like("dj.full_like", layout, memory_format)
    where = placement(device, "dj.full_like")

    out = ops.full_like(input, fill_value, dtype)
    if out._node is not None:
        return out
    if device is not None:
        out = Tensor._make(where.put(out._data))
    return out.requires_grad_(True) if requires_grad else out


def _check_like(name: str, layout, memory_format) -> None:
    check_layout(name, layout)
    check_memory_format(name, memory_format)


def arange(start: Number, end: Number | None = None, step: Number = 1,
           dtype: DTypeLike | None = None, device: DeviceLike | None = None,
           requires_grad: bool = False) -> Tensor:
    """Values from `start` to `end` (exclusive); int64 unless a bound or `dtype` is float."""
    where = placement(device, "dj.arange")
    if end is None:
        start, end = 0, start
    for name, value in (("start", start), ("end", end)):
        check_number("dj.arange", name, value, finite=True)
    check_number("dj.arange", "step", step, nonzero=True, finite=True)
    if dtype is None:
        floats = any(isinstance(v, float) for v in (start, end, step))
        dtype = dtypes.default_float if floats else dtypes.int64
    return _make(where.call("arange", start, end, step, dtype=dtypes.as_dtype(dtype)),
                 requires_grad)


def linspace(start: float, end: float, steps: int, dtype: DTypeLike | None = None,
             device: DeviceLike | None = None) -> Tensor:
    """`steps` evenly spaced values from `start` to `end` (both included)."""
    where = placement(device, "dj.linspace")
    check_number("dj.linspace", "start", start, finite=True)
    check_number("dj.linspace", "end", end, finite=True)
    check_int("dj.linspace", "steps", steps, minimum=0)
    return _make(where.call("linspace", start, end, steps, dtype=_float(dtype)), False)


def eye(n: int, m: int | None = None, dtype: DTypeLike | None = None,
        device: DeviceLike | None = None,
        requires_grad: bool = False) -> Tensor:
    """The identity matrix (n, m or n)."""
    where = placement(device, "dj.eye")
    check_int("dj.eye", "n", n, minimum=0)
    if m is not None:
        check_int("dj.eye", "m", m, minimum=0)
    return _make(where.call("eye", n, m, dtype=_float(dtype)), requires_grad)


def rand(*args: int | Sequence[int], size: Sequence[int] | None = None,
         dtype: DTypeLike | None = None, device: DeviceLike | None = None,
         requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1) from dongjing's seeded generator."""
    where = placement(device, "dj.rand")
    array = where.draw("random", _sized(args, size, "dj.rand"))
    return _make(array.astype(_float(dtype)), requires_grad)


def randn(*args: int | Sequence[int], size: Sequence[int] | None = None,
          dtype: DTypeLike | None = None, device: DeviceLike | None = None,
          requires_grad: bool = False) -> Tensor:
    """Standard normal samples from dongjing's seeded generator."""
    where = placement(device, "dj.randn")
    array = where.draw("standard_normal", _sized(args, size, "dj.randn"))
    return _make(array.astype(_float(dtype)), requires_grad)


def rand_like(x: Tensor | np.ndarray, dtype: DTypeLike | None = None,
              device: DeviceLike | None = None,
              requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1) with `x`'s shape, (floating) dtype and device unless given."""
    return rand(tuple(np.shape(x)), dtype=dtype or _like_float(x, "dj.rand_like"),
                device=_device_of(x, device), requires_grad=requires_grad)


def randn_like(x: Tensor | np.ndarray, dtype: DTypeLike | None = None,
               device: DeviceLike | None = None,
               requires_grad: bool = False) -> Tensor:
    """Standard normal samples with `x`'s shape, (floating) dtype and device unless given."""
    return randn(tuple(np.shape(x)), dtype=dtype or _like_float(x, "dj.randn_like"),
                 device=_device_of(x, device), requires_grad=requires_grad)


def _like_float(x, func: str) -> np.dtype:
    dtype = dtypes.as_dtype(x.dtype) if isinstance(x, Tensor) else np.asarray(x).dtype
    if not dtypes.is_floating(dtype):
        raise ArgumentError(f"{func}: needs a floating point input, got dtype {dtype}")
    return dtype


def randint(low: int = 0, high: int | Sequence[int] | None = None, size: Sequence[int] = (), *,
            generator: object = None,  # noqa: F811 - PyTorch's keyword
            dtype: DTypeLike | None = None, device: DeviceLike | None = None,
            requires_grad: bool = False) -> Tensor:
    """Integers drawn uniformly from [low, high): PyTorch's forms `randint(high, size)`,
    `randint(low, high, size)` and their keyword spellings."""
    where = placement(device, "dj.randint")
    if generator is not None:
        raise ArgumentError("dj.randint: generator= is not supported; seed with dj.manual_seed")
    if requires_grad:
        raise ArgumentError("dj.randint: only floating point tensors can require gradients")
    if isinstance(high, (tuple, list)) and size == ():  # randint(high, size)
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    check_int("dj.randint", "low", low)
    check_int("dj.randint", "high", high)
    if high <= low:
        raise ArgumentError(f"dj.randint: argument 'high' ({high}) must exceed 'low' ({low})")
    size = _shape(size if isinstance(size, (tuple, list)) else (size,), "dj.randint")
    array = where.draw("integers", low, high, size=size)
    return _make(array.astype(dtypes.as_dtype(dtype or dtypes.int64)), False)


def randperm(n: int, dtype: DTypeLike | None = None, device: DeviceLike | None = None) -> Tensor:
    where = placement(device, "dj.randperm")
    check_int("dj.randperm", "n", n, minimum=0)
    array = where.draw("permutation", n)
    return _make(array.astype(dtypes.as_dtype(dtype or dtypes.int64)), False)


def _legacy(name: str, dtype: np.dtype):
    def make(*args, requires_grad: bool = False) -> Tensor:
        return Tensor(*args, dtype=dtype, requires_grad=requires_grad)

    make.__name__ = make.__qualname__ = name
    make.__doc__ = (
        f"PyTorch's legacy `{name}(data)` / `{name}(*sizes)` (zeros): a {dtype} tensor. "
        "A function here, so `isinstance(x, dj.{name})` is not supported."
    )
    return make


FloatTensor = _legacy("FloatTensor", dtypes.float32)
DoubleTensor = _legacy("DoubleTensor", dtypes.float64)
HalfTensor = _legacy("HalfTensor", dtypes.float16)
LongTensor = _legacy("LongTensor", dtypes.int64)
IntTensor = _legacy("IntTensor", dtypes.int32)
BoolTensor = _legacy("BoolTensor", dtypes.bool_)
ByteTensor = _legacy("ByteTensor", np.dtype("uint8"))
