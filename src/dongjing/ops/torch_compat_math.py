"""PyTorch's remaining elementwise and small math functions under their PyTorch names.

Most are compositions of existing ops (so they differentiate, trace and build graph nodes for
free): `square`, `rsqrt`, `reciprocal`, `clamp_min`/`clamp_max`, `lerp`, `frac`, `addmm`,
`nan_to_num`, `var_mean`/`std_mean`. `hypot`, `logaddexp` and `fmod` are primitives: a
composition would overflow (`hypot`), lose accuracy or split a tie's gradient wrongly
(`logaddexp`), or round the quotient (`fmod`). `allclose` and `equal` return Python bools,
as PyTorch's do, so they need values (eager tensors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import dtypes
from ..autocasting import autocast_policy
from ..backends import backend_of, numpy_backend
from ..core import infer as inf
from ..core.registry import Cost, Kind, Spec, define
from ..core.torch_args import dim_aliases, hide_variadic_keywords
from ..dtypes import is_floating
from ..errors import DeviceError, DTypeError, ShapeError
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out, write_out
from .bindings import binary, float_binary
from .compare import eq, ge, logical_or, lt
from .convert import as_tensor, pair
from .elementwise import abs as _abs
from .elementwise import add, cast, clip, clone, div, mul, neg, sigmoid, sqrt, sub, where
from .linalg import cast_to, mm
from .math import _checked, _integer_division_infer, isnan, trunc
from .reduce import mean
from .scan import std, var, variance_arguments

if TYPE_CHECKING:
    from ..types import Dim, TensorLike

__all__ = ["true_divide", "square", "rsqrt", "reciprocal", "clamp_min", "clamp_max", "lerp",
           "frac", "addmm",
           "nan_to_num", "allclose", "equal", "var_mean", "std_mean", "hypot", "logaddexp",
           "fmod"]

_NO_ONNX = "ONNX has no such operator; its expansion is not written yet"


def _floating(x):
    """`x` itself when floating point, else `x` cast to the default float dtype."""
    return x if is_floating(x.dtype) else cast(x, dtypes.default_float)


def _float_binary_infer(name):
    def infer(a: Spec, b: Spec):
        spec = Spec(inf.broadcast(name, a.shape, b.shape), dtypes.promote(a.dtype, b.dtype))
        return inf.floating(name)(spec)

    return infer


# --- primitives ---------------------------------------------------------------------------------
def _hypot_grad(which):
    def rule(g, a, b, *, out):
        return div(mul(g, a if which == 0 else b), out)

    return rule


_hypot = define(
    "hypot", ufunc="hypot", infer=_float_binary_infer("hypot"), kind=Kind.ELEMENTWISE,
    cost=Cost.TRANSCENDENTAL, grads=(_hypot_grad(0), _hypot_grad(1)), binding=float_binary,
    public="hypot", methods="hypot", onnx=None, onnx_reason=_NO_ONNX,
    doc="sqrt(a**2 + b**2) without overflow or underflow in the squares.")


def _logaddexp_grad(which):
    def rule(g, a, b):
        # sigmoid(a - b), not exp(a - out): an infinite input's gradient is 1, not
        # exp(inf - inf) = NaN (PyTorch: logaddexp(2, inf) gives gradients 0 and 1)
        return mul(g, sigmoid(sub(a, b) if which == 0 else sub(b, a)))

    return rule


_logaddexp = define(
    "logaddexp", ufunc="logaddexp", infer=_float_binary_infer("logaddexp"),
    kind=Kind.ELEMENTWISE, cost=Cost.TRANSCENDENTAL,
    grads=(_logaddexp_grad(0), _logaddexp_grad(1)), binding=float_binary, public="logaddexp",
    methods="logaddexp", onnx=None, onnx_reason=_NO_ONNX,
    doc="log(exp(a) + exp(b)), computed without overflow.")

def _fmod_onnx(e, node, ins):
    """C-sign remainder: ONNX Mod with fmod=1 (for integers and floats alike)."""
    a, b = (e.cast(n, i.dtype, node.dtype) for n, i in zip(ins, node.inputs))
    return e.node("Mod", [a, b], fmod=1)


_fmod = define(
    "fmod", forward=_checked("fmod", "fmod"), infer=_integer_division_infer("fmod"),
    kind=Kind.ELEMENTWISE, cost=Cost.CHEAP,
    grads=(lambda g, a, b: g, lambda g, a, b: neg(mul(g, trunc(div(a, b))))),
    binding=binary, public="fmod", methods="fmod", onnx=_fmod_onnx,
    doc="The C remainder of a / b: the sign of the dividend a (unlike `remainder`); an integer "
        "division by zero raises.")
hypot, logaddexp, fmod = _hypot.binding, _logaddexp.binding, _fmod.binding


def true_divide(dividend: Tensor, divisor: Tensor, *, out: Tensor | None = None) -> Tensor:
    """`dividend / divisor` (true division: `div` without a rounding mode)."""
    return div(dividend, divisor, out=out)


# --- unary compositions -----------------------------------------------------------------------
@accepts_out
def square(input) -> Tensor:
    """`input * input` (a bool tensor gives int64, as PyTorch's)."""
    x = as_tensor(input)
    if x.dtype.kind == "b":
        x = cast(x, dtypes.int64)
    return mul(x, x)


@autocast_policy("reciprocal")
@accepts_out
def reciprocal(input) -> Tensor:
    """`1 / input`; integer inputs give the default float dtype."""
    x = _floating(as_tensor(input))
    return div(as_tensor(1.0, x), x)


@autocast_policy("rsqrt")
@accepts_out
def rsqrt(input) -> Tensor:
    """`1 / sqrt(input)`; integer inputs give the default float dtype."""
    return reciprocal(sqrt(_floating(as_tensor(input))))


@accepts_out
def frac(input) -> Tensor:
    """The fractional part `input - trunc(input)` (sign of the input); floating point only."""
    x = as_tensor(input)
    if not is_floating(x.dtype):
        raise DTypeError(f"frac: expects a floating point tensor, got {x.dtype}")
    return sub(x, trunc(x))


@accepts_out
def nan_to_num(input, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """`input` with NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by default 0
    and the largest / lowest finite value of the dtype). Integer tensors are copied as they are.
    The gradient is zero at the replaced elements."""
    x = as_tensor(input)
    if not is_floating(x.dtype):
        return clone(x)
    info = dtypes.finfo(x.dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    out = where(eq(x, float("-inf")), as_tensor(float(neginf), x), x)
    out = where(eq(x, float("inf")), as_tensor(float(posinf), x), out)
    return where(isnan(x), as_tensor(float(nan), x), out)


# --- clamps -----------------------------------------------------------------------------------
def _clamp_one(name: str, input, bound, lower: bool):
    x = as_tensor(input)
    if bound is None:
        raise ShapeError(f"{name}: the bound must be a number or a tensor, got None")
    if not isinstance(bound, Tensor):
        if isinstance(bound, float) and x.dtype.kind in "biu":
            x = cast(x, dtypes.default_float)  # PyTorch promotes: clamp_min(int, 0.5) is float
        return clip(x, min=bound) if lower else clip(x, max=bound)
    x, b = pair(x, bound)
    keep = ge(x, b) if lower else ge(b, x)
    # NaN in `x` stays (as PyTorch's clamp); a NaN bound gives NaN through the `b` branch
    return where(logical_or(keep, isnan(x)), x, b)


@accepts_out
def clamp_min(input: TensorLike, min: TensorLike) -> Tensor:
    """`max(input, min)` elementwise; `min` a number or a (broadcast) tensor. At a tie the
    gradient goes to `input`, as PyTorch's."""
    return _clamp_one("clamp_min", input, min, lower=True)


@accepts_out
def clamp_max(input: TensorLike, max: TensorLike) -> Tensor:
    """`min(input, max)` elementwise; `max` a number or a (broadcast) tensor."""
    return _clamp_one("clamp_max", input, max, lower=False)


# --- lerp -------------------------------------------------------------------------------------
@accepts_out
def lerp(input, end, weight) -> Tensor:
    """`input + weight * (end - input)`: `input` and `end` floating tensors of one dtype,
    `weight` a number or a tensor of that dtype (all three broadcast). Computed as PyTorch does
    (from `end` when |weight| >= 0.5), so ``lerp(a, b, 1)`` is exactly `b`; PyTorch's fused
    multiply-add may differ in the last bit."""
    x = as_tensor(input)
    if not is_floating(x.dtype):
        raise DTypeError(f"lerp: expects floating point tensors, got input of {x.dtype}")
    end = as_tensor(end, x)
    if end.dtype != x.dtype:
        raise DTypeError(f"lerp: expected end of dtype {x.dtype} (the input's), got {end.dtype}")
    if dtypes.is_scalar_number(weight):
        w = float(weight)
        inf.broadcast("lerp", x.shape, end.shape)
        diff = sub(end, x)
        if abs(w) < 0.5:
            return add(x, mul(diff, w))
        return sub(end, mul(diff, 1.0 - w))
    if not isinstance(weight, Tensor):
        raise DTypeError(f"lerp: weight must be a number or a tensor, got "
                         f"{type(weight).__name__}")
    if weight.dtype != x.dtype:
        raise DTypeError(f"lerp: expected weight of dtype {x.dtype} (the input's), got "
                         f"{weight.dtype}")
    inf.broadcast("lerp", x.shape, end.shape, weight.shape)
    diff = sub(end, x)
    small = lt(_abs(weight), 0.5)
    return where(small, add(x, mul(diff, weight)), sub(end, mul(diff, sub(1.0, weight))))


# --- products ---------------------------------------------------------------------------------
@autocast_policy("addmm")
@accepts_out
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, out_dtype=None, *, beta=1,
          alpha=1) -> Tensor:
    """`beta * input + alpha * (mat1 @ mat2)`: `mat1` (n, m) and `mat2` (m, p) matrices, `input`
    broadcastable to (n, p). With ``beta=0`` the input is not read (its NaNs do not spread).
    `out_dtype`: the operands are cast to it first (computed and returned in that dtype)."""
    x, a, b = (cast_to(as_tensor(t), out_dtype) for t in (input, mat1, mat2))
    if a.ndim != 2 or b.ndim != 2:
        raise ShapeError(f"addmm: mat1 and mat2 must be 2-d, got shapes {inf.fmt(a.shape)} and "
                         f"{inf.fmt(b.shape)}")
    if not (x.dtype == a.dtype == b.dtype):
        raise DTypeError(f"addmm: input, mat1 and mat2 must have one dtype, got {x.dtype}, "
                         f"{a.dtype} and {b.dtype}")
    for name, value in (("beta", beta), ("alpha", alpha)):
        if not dtypes.is_scalar_number(value):
            raise DTypeError(f"addmm: {name} must be a number, got {type(value).__name__}")
        if not is_floating(x.dtype) and isinstance(value, float):
            raise DTypeError(f"addmm: {name} must be an int for integer tensors, got {value}")
    product = mm(a, b)
    shape = tuple(product.shape)
    if inf.broadcast("addmm", x.shape, shape) != shape:
        raise ShapeError(f"addmm: input of shape {inf.fmt(x.shape)} does not broadcast to the "
                         f"product's shape {inf.fmt(shape)}")
    if alpha != 1:
        product = mul(product, alpha)
    if beta == 0:
        return product
    return add(x if beta == 1 else mul(x, beta), product)


# --- comparisons to a Python bool -------------------------------------------------------------
def _xp(a, b):
    """The array namespace of two operands' data (a device mismatch raises, naming both)."""
    backend = backend_of(a)
    if backend is not backend_of(b):
        if a.ndim == 0 and backend is numpy_backend:  # a CPU scalar meets a device tensor
            return backend_of(b).xp
        if b.ndim != 0 or backend_of(b) is not numpy_backend:
            raise DeviceError(f"allclose/equal: operands on two devices ({backend.name} and "
                              f"{backend_of(b).name})")
    return backend.xp


def _values(name: str, input, other):
    a = as_tensor(input)
    b = as_tensor(other, a)
    return a._value(f"{name}()"), b._value(f"{name}()")


def allclose(input: TensorLike, other: TensorLike, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """Whether ``|input - other| <= atol + rtol * |other|`` everywhere (broadcast). Both must
    have one dtype, as in PyTorch."""
    a, b = _values("allclose", input, other)
    if a.dtype != b.dtype:
        raise DTypeError(f"allclose: input and other must have one dtype, got {a.dtype} and "
                         f"{b.dtype}")
    inf.broadcast("allclose", a.shape, b.shape)
    return bool(_xp(a, b).allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def equal(input: TensorLike, other: TensorLike) -> bool:
    """True when both have the same shape and the same elements (NaN equals nothing)."""
    a, b = _values("equal", input, other)
    return a.shape == b.shape and bool(_xp(a, b).array_equal(a, b))


# --- (var, mean) and (std, mean) ----------------------------------------------------------------
def _with_mean(name, fn, x, dim, correction, keepdim, out, kwargs):
    dim, c = variance_arguments(name, dim, correction, kwargs)
    x = as_tensor(x)
    result = (fn(x, dim, c, keepdim), mean(x, dim, keepdim=keepdim))
    return result if out is None else write_out(name, result, out)


@dim_aliases
def var_mean(input: Tensor, dim: Dim = None, correction: float = 1, keepdim: bool = False,
             *, out: tuple[Tensor, Tensor] | None = None, **unbiased: bool
             ) -> tuple[Tensor, Tensor]:
    """``(var(input, ...), mean(input, ...))`` over the same dims (arguments as `var`)."""
    return _with_mean("var_mean", var, input, dim, correction, keepdim, out, unbiased)


@dim_aliases
def std_mean(input: Tensor, dim: Dim = None, correction: float = 1, keepdim: bool = False,
             *, out: tuple[Tensor, Tensor] | None = None, **unbiased: bool
             ) -> tuple[Tensor, Tensor]:
    """``(std(input, ...), mean(input, ...))`` over the same dims (arguments as `std`)."""
    return _with_mean("std_mean", std, input, dim, correction, keepdim, out, unbiased)


hide_variadic_keywords(var_mean)
hide_variadic_keywords(std_mean)
