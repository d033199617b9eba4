"""Tensor operators and PyTorch-style methods, each a thin call into `dongjing.ops`."""

from __future__ import annotations

import numpy as np

from . import ops
from .autograd.grad_mode import state as _grad_state
from .autograd.provenance import note_modified
from .errors import DTypeError
from .registry import OPS
from .tensor import Tensor

_REFLECTED = {"__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rpow__", "__rmatmul__"}


def _reflected(fn):
    def method(self, other):
        return fn(other, self)

    method.__name__ = f"reflected_{fn.__name__}"
    return method


def _attach_declared_methods() -> None:
    """Every name an op declares in `methods` becomes a Tensor method calling its binding."""
    for op in OPS.values():
        if op.binding is None:
            continue
        for name in op.methods:
            setattr(Tensor, name, _reflected(op.binding) if name in _REFLECTED else op.binding)


_attach_declared_methods()
Tensor.__matmul__ = ops.matmul
Tensor.__rmatmul__ = _reflected(ops.matmul)
Tensor.__pos__ = lambda self: self
Tensor.__getitem__ = lambda self, key: ops.getitem(self, key)

_METHODS = {
    "matmul": ops.matmul, "mm": ops.mm, "dot": ops.dot,
    "sum": ops.sum, "mean": ops.mean, "var": ops.var, "amax": ops.amax, "amin": ops.amin,
    "max": ops.max, "min": ops.min, "argmax": ops.argmax, "argmin": ops.argmin,
    "reshape": ops.reshape, "view": ops.reshape, "permute": ops.permute,
    "transpose": ops.transpose, "expand": ops.expand, "squeeze": ops.squeeze,
    "unsqueeze": ops.unsqueeze, "flatten": ops.flatten, "softmax": ops.softmax,
    "log_softmax": ops.log_softmax, "logsumexp": ops.logsumexp,
}
for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)


def _where_method(self, condition, other):
    return ops.where(condition, self, other)


def _expand_as(self, other):
    return ops.broadcast_to_like(self, other)


def _reshape_as(self, other):
    return ops.reshape_like(self, other)


Tensor.where = _where_method
Tensor.expand_as = _expand_as
Tensor.view_as = _reshape_as
Tensor.reshape_as = _reshape_as


# --- in-place ----------------------------------------------------------------------------
def _inplace(name: str, fn, ufunc):
    """An in-place method: true in-place on the buffer when no gradient is involved, otherwise
    computed out of place and rebound (the tensor takes the result's value and history)."""

    def method(self, other=None, *args, **kwargs):
        if self._node is not None:  # symbolic: functional update of this handle
            result = fn(self, other, *args, **kwargs) if other is not None else fn(self)
            self._node = result._node
            return self
        other_t = other if isinstance(other, Tensor) else None
        tracking = _grad_state.grad_enabled and (
            self.requires_grad or (other_t is not None and other_t.requires_grad)
        )
        if tracking:
            if self.requires_grad and self.grad_fn is None:
                raise RuntimeError(
                    f"a leaf tensor that requires grad (shape {self.shape}) is being used in an "
                    f"in-place operation ({name}); wrap it in `with dj.no_grad():`"
                )
            shadow = Tensor._make(self.data, self.requires_grad)
            shadow.grad_fn = self.grad_fn
            shadow._version = [self._version[0]]
            result = fn(shadow, other, *args, **kwargs) if other is not None else fn(shadow)
            if result.shape != self.shape:
                raise ValueError(
                    f"{name}: result of shape {result.shape} does not fit in-place into a "
                    f"tensor of shape {self.shape}"
                )
            self.data = result.data.astype(self.dtype, copy=False)
            self.grad_fn = result.grad_fn
            self.requires_grad = True
            self._version[0] += 1
            note_modified(self, name)  # named by the backward engine's in-place error
            return self
        value = other.data if other_t is not None else other
        try:
            if value is None:
                ufunc(self.data, out=self.data)
            else:
                ufunc(self.data, value, out=self.data)
        except np._core._exceptions._UFuncOutputCastingError as exc:
            raise DTypeError(
                f"{name}: result type {np.result_type(self.data, value)} can't be cast to the "
                f"tensor's dtype {self.dtype}"
            ) from exc
        except ValueError as exc:
            raise ValueError(
                f"{name}: cannot apply in place to a tensor of shape {self.shape} with an "
                f"operand of shape {np.shape(value)}: {exc}"
            ) from exc
        self._version[0] += 1
        note_modified(self, name)
        return self

    method.__name__ = name
    return method


Tensor.add_ = _inplace("add_", ops.add, np.add)
Tensor.sub_ = _inplace("sub_", ops.sub, np.subtract)
Tensor.mul_ = _inplace("mul_", ops.mul, np.multiply)
Tensor.div_ = _inplace("div_", ops.div, np.true_divide)
Tensor.pow_ = _inplace("pow_", ops.pow, np.power)
Tensor.__iadd__ = Tensor.add_
Tensor.__isub__ = Tensor.sub_
Tensor.__imul__ = Tensor.mul_
Tensor.__itruediv__ = Tensor.div_


def _set_value(name):
    def method(self, value=None):
        if self._node is not None:
            raise RuntimeError(f"{name} on a symbolic tensor: use dj.assign in a graph")
        if self.requires_grad and self.grad_fn is None and _grad_state.grad_enabled:
            raise RuntimeError(
                f"a leaf tensor that requires grad is being used in an in-place operation "
                f"({name}); wrap it in `with dj.no_grad():`"
            )
        if name == "zero_":
            self.data[...] = 0
        elif name == "fill_":
            self.data[...] = value
        else:  # copy_
            src = value.data if isinstance(value, Tensor) else np.asarray(value)
            np.copyto(self.data, np.broadcast_to(src, self.data.shape), casting="unsafe")
        self._version[0] += 1
        note_modified(self, name)
        return self

    method.__name__ = name
    return method


Tensor.zero_ = _set_value("zero_")
Tensor.fill_ = _set_value("fill_")
Tensor.copy_ = _set_value("copy_")


def _setitem(self, key, value):
    if self._node is not None:
        raise RuntimeError(
            "item assignment on a symbolic tensor: build the new value with dj.where instead"
        )
    if self.requires_grad and _grad_state.grad_enabled:
        raise RuntimeError(
            "item assignment on a tensor that requires grad is not recorded for backward; use "
            "dj.where(mask, value, x), or assign inside `with dj.no_grad():`"
        )
    from .ops.index import build_key, parse_key

    template, tensors = parse_key(key)
    real = build_key(template, [t.data for t in tensors])
    self.data[real] = value.data if isinstance(value, Tensor) else value
    self._version[0] += 1
    note_modified(self, "__setitem__")


Tensor.__setitem__ = _setitem
