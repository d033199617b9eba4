"""Tensor: an array with autograd state (eager), or a symbolic node of a static graph."""

from __future__ import annotations

import threading
import warnings
from typing import TYPE_CHECKING, overload

import numpy as np

from .. import dtypes
from ..backends import backend_of
from ..devices.device import cpu, device_of_array, host_array
from ..devices.device import device as _device
from ..dtypes import is_floating
from ..errors import DTypeError, GraphError
from . import conversion as _conversion
from .conversion import legacy_array

if TYPE_CHECKING:  # the methods attached at import time, for type checkers (a generated stub)
    from ..autograd.function import BackwardNode
    from ..types import DeviceLike, DTypeLike, TensorLike
    from .generated_methods import GeneratedMethods as _AttachedMethods
else:
    _AttachedMethods = object

ndarray = np.ndarray


# Set by the floors above when they load (this module imports none of them; see
# docs/architecture.md): the error for `bool()` of a symbolic tensor (dongjing.graph). The methods
# that run ops, walk the tape or move data (`T`, `detach`, `clone`, `to`, `backward`,
# `register_hook`, `retain_grad`) are attached by dongjing.tensor.methods and dongjing.autograd.
symbolic_bool_error = None


class Tensor(_AttachedMethods):
    """A multi-dimensional array that records how it was computed.

    Eager tensors hold their value in `_data` (a NumPy array; the public `.data` is a Tensor
    sharing that memory, detached from the tape, as in PyTorch); symbolic tensors (built
    inside a `dj.Graph`) hold `_node` instead and have no value until a Session runs the graph.

    >>> x = dj.tensor([1.0, 2.0], requires_grad=True)
    >>> (x * x).sum().backward(); x.grad
    tensor([2., 4.])
    """

    __slots__ = (
        "_data",
        "requires_grad",
        "grad_fn",
        "_grad",
        "_version",
        "_node",
        "_hooks",
        "_accumulator",
        "_retains_grad",
        "_view_of",
        "_views",
        "__weakref__",
    )

    __array_priority__ = 1000  # numpy defers `ndarray op Tensor` to us
    grad_fn: BackwardNode | None
    requires_grad: bool

    def __init__(self, *args: TensorLike | DTypeLike, dtype: DTypeLike | None = None,
                 requires_grad: bool = False) -> None:
        """`Tensor(data)` (an array keeps its dtype; a Python list or tuple becomes float32,
        as PyTorch's legacy constructor does), `Tensor(data, dtype)`, or `Tensor(2, 3)`: a
        float32 tensor of that shape, filled with zeros."""
        array = legacy_array(args, dtype)
        self._data = array
        self.grad_fn = None
        self._grad = None
        self._version = [0]
        self._node = None
        self._view_of = None  # set, not absent: reading an absent slot raises internally
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _make(cls, data: ndarray, requires_grad: bool = False) -> Tensor:
        """Wrap an array without copying or checking (the per-op path)."""
        t = object.__new__(cls)
        t._data = data
        t.requires_grad = requires_grad
        t.grad_fn = None
        t._grad = None
        t._version = [0]
        t._node = None
        t._view_of = None
        return t

    @classmethod
    def _symbolic(cls, node) -> Tensor:
        """Wrap a graph node: `_make`'s slots (one initializer for both), no data."""
        t = cls._make(None, False)
        t._node = node
        return t

    # --- basic properties -------------------------------------------------------------------
    @property
    def data(self) -> Tensor:
        """This tensor's value as a tensor that shares its memory and is cut off from the tape
        (with its own version counter: writes through it are not seen by autograd), as in
        PyTorch: `p.data.add_(g, alpha=-lr)`, `w.data.uniform_(-a, a)`."""
        if self._node is not None:
            self._value(".data")
        t = Tensor._make(self._data, False)
        return t

    @data.setter
    def data(self, value) -> None:
        """`t.data = other`: `t` takes `other`'s memory (a Tensor, or a NumPy array), keeping
        its autograd identity."""
        if isinstance(value, Tensor):
            value = value._value("assigning .data")
        elif not isinstance(value, np.ndarray):
            raise TypeError(
                f"assigned .data must be a Tensor (or a NumPy array), got {type(value).__name__}"
            )
        if self._node is not None:
            self._value("assigning .data")
        self._data = value

    @property
    def shape(self) -> tuple[int | None, ...]:
        node = self._node
        return self._data.shape if node is None else node.shape

    @property
    def dtype(self) -> np.dtype:
        node = self._node
        return self._data.dtype if node is None else node.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return len(self.shape)

    @overload
    def size(self, dim: None = None) -> tuple[int | None, ...]: ...
    @overload
    def size(self, dim: int) -> int | None: ...

    def size(self, dim: int | None = None) -> tuple[int | None, ...] | int | None:
        shape = self.shape
        return shape if dim is None else shape[dim]

    def numel(self) -> int:
        return int(np.prod(self._value("numel()").shape))

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def is_symbolic(self) -> bool:
        return self._node is not None

    @property
    def node(self):
        """The graph node of a symbolic tensor (None for an eager tensor)."""
        return self._node

    @property
    def name(self) -> str | None:
        return None if self._node is None else self._node.name

    @property
    def grad(self) -> Tensor | None:
        if _GradScope.open_anywhere and self._node is None:
            scope = grad_scope.current
            if scope is not None:
                return scope.get_grad(self)
        if self._grad is None and self.grad_fn is not None and not getattr(
            self, "_retains_grad", False
        ):
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf is being accessed. Its "
                ".grad is not populated during backward(); call .retain_grad() on it first.",
                UserWarning,
                stacklevel=2,
            )
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"assigned grad must be a Tensor or None, got {type(value).__name__}")
        if value is not None and value.shape != self.shape:
            raise ValueError(
                f"assigned grad has shape {value.shape} but the tensor has shape {self.shape}"
            )
        if _GradScope.open_anywhere and self._node is None:
            scope = grad_scope.current
            if scope is not None:
                scope.set_grad(self, value)
                return
        self._grad = value

    # --- values ------------------------------------------------------------------------------
    def _value(self, what: str) -> ndarray:
        if self._node is not None:
            raise GraphError(
                f"{what} of symbolic tensor {self._node.name!r} (shape "
                f"{_fmt_shape(self._node.shape)}, {self._node.dtype}): it has no value until the "
                "graph runs. Fetch it with sess.run(tensor), or build the model outside a "
                "dj.Graph to compute eagerly."
            )
        return self._data

    def numpy(self, *, force: bool = False) -> ndarray:
        """The value as a NumPy array (shares memory; works when requires_grad is set). A tensor
        on a GPU raises, as in PyTorch: copy it to the host with `.cpu()` first, or pass
        `force=True` (a host copy, as PyTorch's)."""
        data = self._value(".numpy()")
        if type(data) is ndarray:
            return data
        if force:
            return self.cpu().numpy()
        return host_array(data, ".numpy()")

    def item(self):
        data = self._value(".item()")
        if data.size != 1:
            raise ValueError(f"item(): only a one-element tensor has an item; shape {data.shape}")
        return data.item()

    def tolist(self):
        return self._value(".tolist()").tolist()

    def __array__(self, dtype=None, copy=None):
        data = self._value("np.asarray()")
        if type(data) is not ndarray:
            data = host_array(data, "np.asarray()")
        if dtype is not None and np.dtype(dtype) != data.dtype:
            return data.astype(dtype)
        return data.copy() if copy else data

    # --- DLPack: zero-copy exchange with other array libraries (see dongjing/tensor/dlpack.py) ---
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The data as a DLPack capsule, sharing memory (`torch.from_dlpack(t)`,
        `np.from_dlpack(t)`)."""
        data = self._value("__dlpack__()")
        options = {"stream": stream, "max_version": max_version, "dl_device": dl_device,
                   "copy": copy}
        return data.__dlpack__(**{k: v for k, v in options.items() if v is not None})

    def __dlpack_device__(self) -> tuple:
        """(device type, device id) of the data, as DLPack reports it (CPU: (1, 0))."""
        return self._value("__dlpack_device__()").__dlpack_device__()

    def __float__(self) -> float:
        return float(self._scalar("float()"))

    def __int__(self) -> int:
        return int(self._scalar("int()"))

    def __index__(self) -> int:
        data = self._scalar("index")
        if not np.issubdtype(data.dtype, np.integer):
            raise TypeError("only integer tensors can be used as an index")
        return int(data)

    def __bool__(self) -> bool:
        if self._node is not None:
            raise symbolic_bool_error(self)
        data = self._data
        if data.size != 1:
            raise RuntimeError(
                f"Boolean value of a Tensor with {data.size} elements (shape {data.shape}) is "
                "ambiguous; use .any() or .all()"
            )
        return bool(data)

    def __format__(self, spec: str) -> str:
        """`f"{loss:.4f}"` formats a 0-d tensor's value, as PyTorch does; other tensors take
        only an empty spec (`str(self)`)."""
        if self._node is None and self._data.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def _scalar(self, what: str):
        data = self._value(what)
        if data.size != 1:
            raise ValueError(f"{what}: only a one-element tensor converts; shape {data.shape}")
        return data.reshape(())

    def __len__(self) -> int:
        if self._node is not None:
            shape = self._node.shape
            if not shape or shape[0] is None:
                raise GraphError(
                    f"len() of symbolic tensor {self._node.name!r} with shape "
                    f"{_fmt_shape(shape)}: its first dim is unknown until the graph runs"
                )
            return shape[0]
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        if self._node is not None:
            n = self._node
            return f"<Tensor {n.name!r} shape={_fmt_shape(n.shape)} dtype={n.dtype}>"
        data = self._data
        extras = []
        if type(data) is not ndarray:  # printed from a host copy, naming the device
            where = device_of_array(data)
            if where.type != "cpu":
                extras.append(f"device='{where}'")
            data = backend_of(data).to_numpy(data)
        if data.dtype is dtypes.bfloat16:  # NumPy prints ml_dtypes' scalars unaligned
            body = np.array2string(data.astype(dtypes.float32), separator=", ",
                                   prefix="tensor(", precision=4)
        else:
            body = np.array2string(data, separator=", ", prefix="tensor(")
        if data.dtype not in (dtypes.float32, dtypes.int64, dtypes.bool_):
            extras.insert(0, f"dtype=dongjing.{data.dtype}")
        if self.grad_fn is not None:
            extras.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + ", ".join([body] + extras) + ")"

    # --- autograd ---------------------------------------------------------------------------
    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if requires_grad and not is_floating(self.dtype):
            raise DTypeError(
                f"only floating point tensors can require gradients; this tensor has dtype "
                f"{self.dtype} (shape {self.shape})"
            )
        if self.grad_fn is not None and not requires_grad:
            raise RuntimeError(
                "requires_grad_(False) on a non-leaf tensor: use .detach() instead"
            )
        self.requires_grad = bool(requires_grad)
        return self

    def detach_(self) -> Tensor:
        self.grad_fn = None
        self.requires_grad = False
        return self

    # --- conversion ---------------------------------------------------------------------------
    @property
    def device(self):
        """Where the data lives: `dj.device("cpu")`, or `dj.device("cuda", i)` on a GPU."""
        data = self._data
        return cpu if type(data) is ndarray or data is None else device_of_array(data)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @overload
    def type(self, dtype: None = None, non_blocking: bool = False, **kwargs: bool) -> str: ...
    @overload
    def type(self, dtype: DTypeLike, non_blocking: bool = False, **kwargs: bool) -> Tensor: ...

    def type(self, dtype: DTypeLike | None = None, non_blocking: bool = False,
             **kwargs: bool) -> Tensor | str:
        """This tensor in `dtype` (a dtype, or PyTorch's type string: "torch.DoubleTensor");
        without `dtype`, PyTorch's type string of this tensor ("torch.FloatTensor").
        `non_blocking` (and its old spelling `async`) is accepted: copies are synchronous."""
        if set(kwargs) - {"async"}:
            raise TypeError(f"type() got an unexpected keyword argument "
                            f"{sorted(set(kwargs) - {'async'})[0]!r}")
        if dtype is None:
            return dtypes.legacy_type_name(self.dtype)
        if isinstance(dtype, str):
            dtype = dtypes.from_type_name(dtype)
        return self.to(dtype)



class _GradScope(threading.local):
    """While `dj.jit` traces a function, `.grad` of eager tensors is read and written through
    `current` (the trace's symbolic gradients), never stored on the tensors themselves.
    One per thread: a trace in one thread leaves other threads' `.grad` alone."""

    current = None
    # scopes entered in any thread and not yet left: while 0, `.grad` skips the thread-local
    open_anywhere = 0
    _lock = threading.Lock()

    def enter(self, scope) -> None:
        with _GradScope._lock:
            _GradScope.open_anywhere += 1
        self.current = scope

    def leave(self, outer) -> None:
        self.current = outer
        with _GradScope._lock:
            _GradScope.open_anywhere -= 1


grad_scope = _GradScope()
_conversion.tensor_type = Tensor


def _fmt_shape(shape) -> str:
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + (
        ",)" if len(shape) == 1 else ")"
    )
