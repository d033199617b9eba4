"""PyTorch's in-place Tensor methods (`add_(g, alpha=)`, `addcdiv_`, `clamp_`, `uniform_`...).

The in-place variants an op declares among its ``methods=`` (``"tanh_"``, ``"__imul__"``) are
generated from its record by `inplace_method`; the ones with extra arguments are written here.
Each computes its new value with `dongjing.ops` and writes it into the tensor's own memory
(which a view shares with its base). When gradients are recorded the write goes through
`autograd.views.write_recorded` (history rewritten as PyTorch's CopySlices does); a leaf that
requires grad, or a view of one, is refused as PyTorch refuses it.
"""

from __future__ import annotations

import inspect
import warnings
from contextlib import nullcontext
from typing import TYPE_CHECKING

import numpy as np

from .. import ops
from ..autograd import views as _views
from ..autograd.grad_mode import no_grad
from ..autograd.grad_mode import state as _grad_state
from ..autograd.provenance import note_modified
from ..backends import backend_of, is_array
from ..core.torch_args import as_method, unlisted_keywords
from ..devices.random import generator as _global
from ..dtypes import is_floating, scalar_dtype
from ..errors import DTypeError, ShapeError
from ..ops.index import build_key, parse_key
from ..short_paths import declare as _declare_short_path
from ..short_paths import state as _short
from . import Tensor
from .conversion import to_array
from .out_argument import write_array

if TYPE_CHECKING:
    from ..types import TensorLike


def run_inplace(t: Tensor, name: str, compute, operands=(), symbolic: bool = True) -> Tensor:
    """Set `t` to `compute(t)` in place; `operands` are the other tensors involved."""
    if t._node is not None:  # symbolic: a functional update of this handle
        if not symbolic:
            raise RuntimeError(f"{name} on a symbolic tensor: use dj.assign in a graph")
        if t._view_of is None and not _views.live_views(t):
            t._node = compute(t)._node
        else:  # a view or a base of views: the write reaches the others, as eagerly
            _views.write_symbolic(t, compute(t))
        return t
    _views.check_inplace(t, name)
    if _views.tracked(t, *operands):
        _views.write_recorded(t, name, compute)
        return t
    with no_grad():
        result = compute(t)
    write_array(t, name, result._data if isinstance(result, Tensor) else result)
    return t


def _check_factor(factor, name: str, what: str) -> None:
    if isinstance(factor, Tensor) or not isinstance(factor, (int, float, np.number)) or (
        isinstance(factor, (bool, np.bool_))
    ):
        raise TypeError(f"{name}: {what} must be a Python number, got {type(factor).__name__}")


def _scaled(other, factor, name: str, what: str):
    """`factor * other` (`other` when the factor is 1); the factor must be a number."""
    _check_factor(factor, name, what)
    if factor == 1:
        return other
    return ops.mul(other, factor)


def _tensors(*values):
    return tuple(v for v in values if isinstance(v, Tensor))


_declare_short_path("tensor_inplace.direct", __name__, "an untracked in-place operator written "
                    "by the ufunc straight into the tensor's memory, without run_inplace")


# --- arithmetic ---------------------------------------------------------------------------
def _direct(t: Tensor, name: str, ufunc, other, alpha=1) -> bool:
    """The untracked fast path: the ufunc writes straight into `t`'s memory. False when the
    op must go through `run_inplace` (symbolic, or gradients to record)."""
    # short path: tensor_inplace.direct
    if t._node is not None or not _short.on:
        return False  # symbolic, or short paths off
    if type(t._data) is not np.ndarray:
        return _direct_on_device(t, name, ufunc, other, alpha)
    if _grad_state.grad_enabled and t._view_of is not None:
        return False  # a view: its root decides (run_inplace checks the chain)
    if isinstance(other, Tensor):
        if other._node is not None or type(other._data) is not np.ndarray:
            return False
        if _grad_state.grad_enabled and (t.requires_grad or other.requires_grad):
            return False
        value = other._data
    elif _grad_state.grad_enabled and t.requires_grad:
        return False
    else:
        value = other
    if alpha != 1:
        value = np.asarray(value) * alpha
    try:
        ufunc(t._data, value, out=t._data, casting="same_kind")
    except TypeError as exc:  # NumPy's casting error
        raise DTypeError(
            f"{name}: result type {np.result_type(t._data, value)} can't be cast to the "
            f"tensor's dtype {t.dtype}"
        ) from exc
    except ValueError as exc:
        raise ShapeError(
            f"{name}: result of shape {np.broadcast_shapes(t.shape, np.shape(value))} does not "
            f"fit in place into a tensor of shape {t.shape}"
        ) from exc
    t._version[0] += 1
    note_modified(t, name)
    return True


def _direct_on_device(t: Tensor, name: str, ufunc, other, alpha) -> bool:
    """`_direct` for a tensor on a device, taken only where nothing can fail or promote: the
    other operand is a number of the tensor's dtype (its cached device scalar) or an untracked
    tensor of the same backend, device, dtype and shape; else False (`run_inplace`)."""
    data = t._data
    backend = backend_of(data, None)
    if backend is None or backend.device_type == "cpu" or alpha != 1:
        return False
    if _grad_state.grad_enabled and (t.requires_grad or t._view_of is not None):
        return False
    if ufunc is np.true_divide and not is_floating(data.dtype):
        return False
    if isinstance(other, Tensor):
        value = other._data
        if (other._node is not None or not backend.owns(value) or value.dtype != data.dtype
                or value.shape != data.shape or backend.index_of(value) != backend.index_of(data)
                or (_grad_state.grad_enabled and other.requires_grad)):
            return False
    elif type(other) in (int, float) and scalar_dtype(other, data.dtype) == data.dtype:
        value = backend.scalar(np.asarray(other, data.dtype))
    else:
        return False
    with backend.using(backend.index_of(data)) if backend.multi_device else nullcontext():
        getattr(backend.xp, ufunc.__name__)(data, value, out=data)
    t._version[0] += 1
    note_modified(t, name)
    return True


def _deprecated_overload(name: str, other, alpha):
    """PyTorch's old `x.add_(alpha, other)` form (a number, then a tensor; still accepted there,
    with a warning): (other, alpha) either way."""
    if not isinstance(alpha, Tensor) or isinstance(other, Tensor):
        return other, alpha
    warnings.warn(f"This overload of {name} is deprecated: {name}(Number alpha, Tensor other); "
                  f"use {name}(other, alpha=alpha)", UserWarning, stacklevel=3)
    return alpha, other


def add_(self: Tensor, other: TensorLike, alpha: float = 1) -> Tensor:
    """`self += alpha * other` in place."""
    other, alpha = _deprecated_overload("add_", other, alpha)
    _check_factor(alpha, "add_", "alpha")
    if _direct(self, "add_", np.add, other, alpha):
        return self
    return run_inplace(self, "add_", lambda s: ops.add(s, _scaled(other, alpha, "add_", "alpha")),
                       _tensors(other))


def sub_(self: Tensor, other: TensorLike, alpha: float = 1) -> Tensor:
    """`self -= alpha * other` in place."""
    other, alpha = _deprecated_overload("sub_", other, alpha)
    _check_factor(alpha, "sub_", "alpha")
    if _direct(self, "sub_", np.subtract, other, alpha):
        return self
    return run_inplace(self, "sub_", lambda s: ops.sub(s, _scaled(other, alpha, "sub_", "alpha")),
                       _tensors(other))


def add(self: Tensor, other: TensorLike, alpha: float = 1) -> Tensor:
    """`self + alpha * other`."""
    other, alpha = _deprecated_overload("add", other, alpha)
    return ops.add(self, _scaled(other, alpha, "add", "alpha"))


def sub(self: Tensor, other: TensorLike, alpha: float = 1) -> Tensor:
    """`self - alpha * other`."""
    other, alpha = _deprecated_overload("sub", other, alpha)
    return ops.sub(self, _scaled(other, alpha, "sub", "alpha"))


def div_(self: Tensor, value: TensorLike, *, rounding_mode: str | None = None) -> Tensor:
    """`self /= value` in place (`rounding_mode` "trunc" or "floor": the rounded quotient)."""
    if rounding_mode is None and _direct(self, "div_", np.true_divide, value):
        return self
    return run_inplace(self, "div_", lambda s: ops.div(s, value, rounding_mode=rounding_mode),
                       _tensors(value))


def pow_(self: Tensor, exponent: TensorLike) -> Tensor:
    return run_inplace(self, "pow_", lambda s: ops.pow(s, exponent), _tensors(exponent))


def addcmul_(self: Tensor, tensor1: TensorLike, tensor2: TensorLike, *, value: float = 1
             ) -> Tensor:
    """`self += value * tensor1 * tensor2` in place."""
    return run_inplace(self, "addcmul_", lambda s: addcmul(s, tensor1, tensor2, value=value),
                       _tensors(tensor1, tensor2))


def addcdiv_(self: Tensor, tensor1: TensorLike, tensor2: TensorLike, *, value: float = 1
             ) -> Tensor:
    """`self += value * tensor1 / tensor2` in place."""
    return run_inplace(self, "addcdiv_", lambda s: addcdiv(s, tensor1, tensor2, value=value),
                       _tensors(tensor1, tensor2))


def addcmul(self: Tensor, tensor1: TensorLike, tensor2: TensorLike, *, value: float = 1
            ) -> Tensor:
    """`self + value * tensor1 * tensor2`."""
    return ops.add(self, _scaled(ops.mul(tensor1, tensor2), value, "addcmul", "value"))


def addcdiv(self: Tensor, tensor1: TensorLike, tensor2: TensorLike, *, value: float = 1
            ) -> Tensor:
    """`self + value * tensor1 / tensor2`."""
    return ops.add(self, _scaled(ops.div(tensor1, tensor2), value, "addcdiv", "value"))


def clamp_(self: Tensor, min: TensorLike | None = None, max: TensorLike | None = None
           ) -> Tensor:
    """Clamp in place to `[min, max]`."""
    return run_inplace(self, "clamp_", lambda s: ops.clamp(s, min, max), _tensors(min, max))


def inplace_method(op, name: str):
    """The in-place Tensor method `name` of `op` (declared in its ``methods=``): the op's
    binding applied to the tensor and the method's arguments, written into the tensor. A
    two-input ufunc op writes straight into the tensor's memory when nothing is recorded."""
    fn = op.binding if name.startswith("__") else as_method(name, op.binding)
    ufunc = op.ufunc if op.ufunc is not None and op.ufunc.nin == 2 else None
    label = name[3:-2] + "_" if name.startswith("__i") else name  # errors say x.mul_ for x *=

    def method(self, *args, **kwargs):
        if ufunc is not None and len(args) == 1 and not kwargs and _direct(
                self, label, ufunc, args[0]):
            return self
        return run_inplace(self, label, lambda s: fn(s, *args, **kwargs),
                           _tensors(*args, *kwargs.values()))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`{op.public[0] if op.public else op.name}` in place."
    method.__signature__ = inspect.signature(fn)  # its first parameter stands for self
    return method


def _unary_inplace(name: str, fn):
    def method(self):
        return run_inplace(self, name, fn)

    method.__name__ = name
    method.__doc__ = f"`{name[:-1]}` in place."
    return method


# --- filling ------------------------------------------------------------------------------
def _constant(t: Tensor, values) -> Tensor:
    return Tensor._make(np.asarray(values).astype(t.dtype, copy=False))


def fill_(self: Tensor, value: TensorLike) -> Tensor:
    """Set every element to `value` (a number or a one-element tensor)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ShapeError(f"fill_: the value must be a 0-d tensor, got shape {value.shape}")
        return copy_(self, value)
    return run_inplace(self, "fill_", lambda s: _constant(s, np.full(s.shape, value)),
                       symbolic=False)


def zero_(self: Tensor) -> Tensor:
    """Set every element to zero."""
    return fill_(self, 0)


def copy_(self: Tensor, src: TensorLike, non_blocking: bool = False) -> Tensor:
    """Copy `src` (broadcast to this shape, any dtype) into this tensor."""
    if not isinstance(src, Tensor):
        src = Tensor._make(to_array(src))

    def compute(s):
        value = src if src.dtype == s.dtype else ops.cast(src, s.dtype)
        return value if value.shape == s.shape else ops.broadcast_to(value, s.shape)

    if src.shape != self.shape:
        try:
            np.broadcast_shapes(src.shape, self.shape)
        except ValueError:
            raise ShapeError(
                f"copy_: source of shape {src.shape} does not broadcast to {self.shape}"
            ) from None
    return run_inplace(self, "copy_", compute, (src,), symbolic=False)


def uniform_(self: Tensor, from_: float = 0, to: float = 1, *, generator: object = None
             ) -> Tensor:
    """Fill with samples of U(from_, to) from dongjing's seeded generator."""
    rng = _generator(generator, "uniform_")
    return run_inplace(self, "uniform_",
                       lambda s: _constant(s, rng.uniform(from_, to, s.shape)), symbolic=False)


unlisted_keywords(uniform_, "generator")


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: object = None
            ) -> Tensor:
    """Fill with samples of N(mean, std^2) from dongjing's seeded generator."""
    rng = _generator(generator, "normal_")
    return run_inplace(self, "normal_", lambda s: _constant(s, rng.normal(mean, std, s.shape)),
                       symbolic=False)


def _generator(generator, name: str):
    if generator is not None:
        raise NotImplementedError(
            f"{name}: generator= is not supported; seed the global generator with "
            "dj.manual_seed"
        )

    return _global()


def _setitem(self, key, value):
    """`self[key] = value`: a write through the view `self[key]` (basic indexing), or into
    the selected elements (advanced indexing, not recorded for backward)."""
    if self._node is not None:
        raise RuntimeError(
            "item assignment on a symbolic tensor: build the new value with dj.where instead"
        )

    template, tensors = parse_key(key)
    if not tensors:
        target = ops.getitem(self, key)
        copy_(target, _drop_leading_ones(value, target.ndim))
        return
    _views.check_inplace(self, "__setitem__")
    if _views.tracked(self, *_tensors(value)):
        raise _views.InplaceError(
            "item assignment with an index tensor on a tensor that requires grad (or with a "
            "value that does) is not recorded for backward; use dj.where(mask, value, x), or "
            "assign inside `with dj.no_grad():`"
        )
    real = build_key(template, [t._data for t in tensors])
    self._data[real] = value._data if isinstance(value, Tensor) else value
    self._version[0] += 1
    note_modified(self, "__setitem__")


def _drop_leading_ones(value, ndim: int):
    """`value` without the leading size-1 dims that exceed `ndim` (PyTorch drops them when
    assigning, so `x[0] = row[None]` works)."""
    shape = value.shape if isinstance(value, Tensor) or is_array(value) else np.shape(value)
    extra = len(shape) - ndim
    if extra <= 0 or any(n != 1 for n in shape[:extra]):
        return value
    if isinstance(value, Tensor):
        return ops.reshape(value, tuple(shape[extra:]))
    return np.reshape(np.asarray(value), tuple(shape[extra:]))


def attach() -> None:
    """Install the methods on Tensor."""
    for fn in (add_, sub_, add, sub, div_, pow_, addcmul_, addcdiv_, addcmul, addcdiv,
               clamp_, fill_, zero_, copy_, uniform_, normal_):
        setattr(Tensor, fn.__name__, fn)
    Tensor.clip_ = clamp_
    Tensor.__iadd__ = add_
    Tensor.__isub__ = sub_
    Tensor.__itruediv__ = div_
    Tensor.__setitem__ = _setitem
