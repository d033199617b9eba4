"""More of PyTorch's Tensor methods: the `torch.*` functions added for issue 33 as methods
(`t.kron(u)`, `t.median(1)`, ...), their in-place forms (`t.arccos_()`, `t.index_fill_(...)`,
through `run_inplace`, so versions, views and autograd behave as for `add_`), the small queries
PyTorch code asks a tensor (`data_ptr`, `is_signed`, `dim_order`, ...), random fills
(`random_`, `cauchy_`, `geometric_`, `log_normal_`) and `apply_`/`map_`/`map2_`."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import dtypes, ops
from ..errors import ArgumentError, DTypeError, ShapeError
from ..ops.broadcast import sum_to_shape
from ..ops.torch_copies import unfold as _unfold
from ..types import Number, TensorLike
from . import Tensor
from . import torch_functions as _torch_functions
from .inplace import _constant, _generator, _tensors, run_inplace

# methods that are the dj.* function of the same name with the tensor first
_SAME_NAME = (
    "addbmm addmv addr aminmax angle arccos arccosh arcsin arcsinh arctan arctanh baddbmm "
    "bincount conj conj_physical copysign corrcoef count_nonzero cov cummax cummin deg2rad "
    "diag_embed diagflat diagonal diagonal_scatter dist dsplit exp2 fix fliplr flipud "
    "float_power fmax fmin ger greater greater_equal heaviside histc hsplit index_copy "
    "index_fill index_put inner isclose isneginf isposinf isreal kron kthvalue ldexp less "
    "less_equal logaddexp2 logcumsumexp logical_xor logit masked_scatter median mode msort mv "
    "nanmean nanmedian nanquantile nansum narrow_copy not_equal positive put quantile rad2deg "
    "ravel renorm resolve_conj resolve_neg rot90 select select_scatter sgn sinc slice_scatter "
    "split_with_sizes take tensor_split unique_consecutive unsafe_chunk unsafe_split "
    "unsafe_split_with_sizes vdot vsplit xlogy broadcast_to"
).split()
# PyTorch's other names of existing methods
_ALIASES = {"absolute": "abs", "divide": "div", "multiply": "mul", "subtract": "sub",
            "negative": "neg"}
# in-place forms: computed by the method of the name without "_", written into the tensor
_INPLACE = (
    "absolute acos addmm arctan2 asin atan2 atan ceil cos cosh cumprod cumsum divide eq erf "
    "expm1 floor floor_divide fmod ge gt hypot le log10 log1p log2 logical_and logical_not "
    "logical_or lt multiply nan_to_num ne negative remainder round sin sinh subtract tan tril "
    "triu trunc addbmm addmv addr baddbmm arccos arccosh arcsin arcsinh arctan "
    "arctanh copysign deg2rad rad2deg exp2 fix greater greater_equal heaviside index_copy "
    "index_fill index_put ldexp less less_equal logical_xor logit masked_scatter not_equal put "
    "renorm sgn sinc xlogy"
).split()


def _bound(name: str):
    """The method calling dj.<name> (an op-table function) with the tensor first."""
    fn = getattr(ops, name, None) or getattr(_torch_functions, name)

    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"`dj.{name}` of this tensor."
    method.__signature__ = inspect.signature(fn)  # its first parameter stands for self
    return method


def _inplace(name: str):
    def method(self, *args, **kwargs):
        compute = getattr(Tensor, name)
        return run_inplace(self, name + "_", lambda s: compute(s, *args, **kwargs),
                           _tensors(*args, *kwargs.values()))

    method.__name__ = name + "_"
    method.__doc__ = f"`{name}` in place."
    target = getattr(ops, name, None) or getattr(_torch_functions, name, None)
    if target is not None:  # the function's parameters (its first stands for self)
        method.__signature__ = inspect.signature(target)
    return method


# --- conversions and queries -----------------------------------------------------------------
def true_divide(self: Tensor, other: TensorLike) -> Tensor:
    """This tensor divided by `other` in floating point (`div` without a rounding mode)."""
    return ops.true_divide(self, other)


def true_divide_(self: Tensor, other: TensorLike) -> Tensor:
    """`true_divide` in place."""
    return self.div_(other)


def adjoint(self: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims (the transpose, for real tensors)."""
    if self.ndim < 2:
        raise ShapeError(f"adjoint: expects at least 2 dims, got shape {self.shape}")
    return ops.transpose(self, -2, -1)


def data_ptr(self: Tensor) -> int:
    """The address of the first element."""
    data = self._value("Tensor.data_ptr()")
    interface = getattr(data, "__array_interface__", None) or data.__cuda_array_interface__
    return int(interface["data"][0])


def storage_offset(self: Tensor) -> int:
    """How many elements after the start of its base array this tensor's first element is."""
    data = self._value("Tensor.storage_offset()")
    base = data
    while getattr(base, "base", None) is not None:
        base = base.base
    if not hasattr(base, "__array_interface__"):
        return 0
    start = base.__array_interface__["data"][0]
    return (data_ptr(self) - start) // data.itemsize


def get_device(self: Tensor) -> int:
    """-1 on the CPU, else the index of the GPU holding the tensor."""
    device = self.device
    return -1 if device.type == "cpu" else int(device.index or 0)


def is_pinned(self: Tensor) -> bool:
    """False: dongjing does not allocate page-locked host memory."""
    return False


def is_shared(self: Tensor) -> bool:
    """False: dongjing tensors are not in shared memory."""
    return False


def _false(self: Tensor) -> bool:
    return False


def is_signed(self: Tensor) -> bool:
    """Whether the dtype holds negative numbers (floats and signed integers)."""
    return self.dtype.kind in "fi"


def is_nonzero(self: Tensor) -> bool:
    """The truth of a one-element tensor."""
    if int(np.prod(self.shape)) != 1:
        raise RuntimeError(f"is_nonzero: expects a one-element tensor, got shape {self.shape}")
    return bool(self.item())


def is_same_size(self: Tensor, other: Tensor) -> bool:
    """Whether `other` has this tensor's shape."""
    return tuple(self.shape) == tuple(other.shape)


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Whether both tensors are the same memory with the same shape and strides."""
    a, b = self._value("is_set_to"), tensor._value("is_set_to")
    return a.shape == b.shape and a.strides == b.strides and data_ptr(self) == data_ptr(tensor)


def dim_order(self: Tensor, *, ambiguity_check: bool = False) -> tuple[int, ...]:
    """The dims from outermost to innermost in memory (by decreasing stride)."""
    steps = self.stride()
    return tuple(sorted(range(self.ndim), key=lambda d: -steps[d]))


def sum_to_size(self: Tensor, *size: int | Sequence[int]) -> Tensor:
    """The sum of this tensor down to `size`, a shape it broadcasts from."""
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    try:
        np.broadcast_shapes(size, tuple(self.shape))
    except ValueError:
        raise ShapeError(f"sum_to_size: {size} is not expandable to {self.shape}") from None
    if np.broadcast_shapes(size, tuple(self.shape)) != tuple(self.shape):
        raise ShapeError(f"sum_to_size: {size} is not expandable to {self.shape}")
    return sum_to_shape(self, size)


def unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Every window of `size` elements along `dimension`, `step` apart, as a new last dim."""
    return _unfold(self, dimension, size, step)


def as_strided(self: Tensor, size: Sequence[int], stride: Sequence[int],
               storage_offset: int | None = None) -> Tensor:
    """A tensor of `size` whose element i reads element offset + sum(i_k * stride_k) of this
    (contiguous) tensor's row-major elements, as PyTorch reads its storage."""
    if not self.is_contiguous():
        raise ShapeError("as_strided: the tensor must be contiguous (call .contiguous())")
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    storage_offset = 0 if storage_offset is None else storage_offset
    if len(size) != len(stride):
        raise ShapeError(f"as_strided: size {size} and stride {stride} differ in length")
    flat = np.full(size, int(storage_offset), np.int64)
    for axis, (n, step) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[axis] = n
        flat = flat + (np.arange(n) * step).reshape(shape)
    total = int(np.prod(self.shape))
    if flat.size and (flat.min() < 0 or flat.max() >= total):
        raise ShapeError(f"as_strided: size {size}, stride {stride} and offset "
                         f"{storage_offset} reach outside the {total} elements")
    return ops.take(self, ops.convert.as_tensor(flat))


# --- random fills and Python callables --------------------------------------------------------
def random_(self: Tensor, from_: int = 0, to: int | None = None, *,
            generator: None = None) -> Tensor:
    """Fill with integers drawn uniformly from [from, to) (from [0, to) given one bound; by
    default [0, 2^mantissa] for floats, the dtype's range for integers)."""
    rng = _generator(generator, "random_")
    low, high = (0, from_) if to is None and from_ != 0 else (from_, to)
    if high is None:
        high = 2 ** (dtypes.finfo(self.dtype).nmant + 1) if self.dtype.kind == "f" else \
            int(np.iinfo(self.dtype).max) + 1 if self.dtype.kind in "iu" else 2
    if high <= low:
        raise ArgumentError(f"random_: expects from < to, got {low} and {high}")
    return run_inplace(self, "random_",
                       lambda s: _constant(s, rng.integers(low, high, s.shape)), symbolic=False)


def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *,
            generator: None = None) -> Tensor:
    """Fill with draws of the Cauchy distribution."""
    rng = _generator(generator, "cauchy_")
    return run_inplace(self, "cauchy_",
                       lambda s: _constant(s, median + sigma * rng.standard_cauchy(s.shape)),
                       symbolic=False)


def geometric_(self: Tensor, p: float, *, generator: None = None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    rng = _generator(generator, "geometric_")
    if not 0 < p <= 1:
        raise ArgumentError(f"geometric_: p must be in (0, 1], got {p}")
    return run_inplace(self, "geometric_", lambda s: _constant(s, rng.geometric(p, s.shape)),
                       symbolic=False)


def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *,
                generator: None = None) -> Tensor:
    """Fill with exp of N(mean, std^2) draws."""
    rng = _generator(generator, "log_normal_")
    if self.dtype.kind != "f":
        raise DTypeError(f"log_normal_: expects a floating point tensor, got {self.dtype}")
    return run_inplace(self, "log_normal_",
                       lambda s: _constant(s, rng.lognormal(mean, std, s.shape)),
                       symbolic=False)


def fill_diagonal_(self: Tensor, fill_value: Number, wrap: bool = False) -> Tensor:
    """Set the main diagonal (all indices equal) to `fill_value`; a tall 2-d matrix with
    `wrap` restarts the diagonal every ncols + 1 rows, as NumPy's and PyTorch's do."""
    if self.ndim < 2 or (self.ndim > 2 and len(set(self.shape)) != 1):
        raise ShapeError(f"fill_diagonal_: expects a 2-d tensor or one with equal dims, got "
                         f"shape {self.shape}")
    mask = np.zeros(tuple(self.shape), bool)
    np.fill_diagonal(mask, True, wrap=wrap)
    return run_inplace(self, "fill_diagonal_",
                       lambda s: ops.masked_fill(s, ops.convert.as_tensor(mask), fill_value))


def _python_map(name: str, self: Tensor, fn: Callable[..., Number], *others: Tensor) -> Tensor:
    arrays = [self._value(name)] + [np.broadcast_to(o._value(name), self.shape) for o in others]
    values = np.vectorize(fn, otypes=[self.dtype])(*arrays)
    return run_inplace(self, name, lambda s: _constant(s, values), symbolic=False)


def apply_(self: Tensor, callable: Callable[[Any], Number]) -> Tensor:
    """Replace each element x by callable(x) (a Python function; CPU, slow)."""
    return _python_map("apply_", self, callable)


def bernoulli(self: Tensor, p: float | None = None, *, generator: None = None) -> Tensor:
    """`dj.bernoulli` of this tensor (PyTorch's method takes no `out=`)."""
    return _torch_functions.bernoulli(self, p, generator=generator)


def map_(self: Tensor, tensor: Tensor, callable: Callable[[Any, Any], Number]) -> Tensor:
    """Replace each element x by callable(x, y), y the matching element of `tensor`."""
    return _python_map("map_", self, callable, tensor)


def map2_(self: Tensor, x: Tensor, y: Tensor, callable: Callable[[Any, Any, Any], Number]
          ) -> Tensor:
    """Replace each element a by callable(a, b, c) with the matching elements of x and y."""
    return _python_map("map2_", self, callable, x, y)


def attach() -> None:
    """Install the methods on Tensor."""
    for name in _SAME_NAME:
        setattr(Tensor, name, _bound(name))
    for name, target in _ALIASES.items():
        setattr(Tensor, name, getattr(Tensor, target))
    for name in _INPLACE:
        setattr(Tensor, name + "_", _inplace(name))
    for fn in (true_divide, true_divide_, adjoint, data_ptr, storage_offset, get_device, is_pinned,
               is_shared, is_signed, is_nonzero, is_same_size, is_set_to, dim_order,
               sum_to_size, unfold, as_strided, random_, cauchy_, geometric_,
               log_normal_, fill_diagonal_, apply_, map_, map2_, bernoulli):
        setattr(Tensor, fn.__name__, fn)
    Tensor.const_data_ptr = data_ptr
    for name in ("is_complex", "is_conj", "is_neg", "is_distributed"):
        setattr(Tensor, name, _false)

