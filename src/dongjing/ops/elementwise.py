"""Elementwise primitives: arithmetic, transcendental, selection and casts.

Each op is one `define(...)`: its forward (a ufunc name or a function of the backend
namespace `xp`), dtype rule, per-input gradient rules, fusion cost, ONNX export and published
names. The engines reduce broadcast gradients; rules never call `sum_to_shape`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, overload

from .. import dtypes
from ..autograd.grad_mode import no_grad
from ..backends import numpy_backend
from ..backends.buffer_pool import pool as _pool
from ..core import infer as inf
from ..core import late
from ..core.registry import Cost, Kernel, Kind, Onnx, Spec, binds, define
from ..cpu_kernels import parallel
from ..dispatch import apply, apply1, apply2
from ..dtypes import is_floating
from ..errors import DTypeError
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out, write_out
from . import onnx_rules
from .bindings import alpha_binary, binary, division, float_unary, unary, unary_no_out
from .compare import eq, ge, gt, le, logical_and, lt
from .convert import as_tensor, pair
from .relu_grad import BITMASK_DTYPES, relu_backward_out

if TYPE_CHECKING:
    from ..types import TensorLike

E = Kind.ELEMENTWISE
CHEAP = Cost.CHEAP
SLOW = Cost.TRANSCENDENTAL


# --- arithmetic ---------------------------------------------------------------------------
def _arith_infer(name):
    base = inf.elementwise(name)

    def infer(a: Spec, b: Spec, **attrs):
        shape, dtype = base(a, b)
        if dtype.kind == "b" and name == "sub":
            raise DTypeError(f"{name}: not defined for bool tensors; use logical_xor")
        return shape, dtype

    return infer


def _div_infer(a: Spec, b: Spec):
    shape, dtype = inf.elementwise("div")(a, b)
    return shape, dtype if is_floating(dtype) else dtypes.default_float


_add = define("add", ufunc="add", infer=_arith_infer("add"), kind=E, cost=CHEAP,
              identity=-0.0, commutative=True, grads=(lambda g, a, b: g, lambda g, a, b: g),
              binding=alpha_binary, public="add", methods=("add", "__add__", "__radd__"),
              onnx=Onnx("Add", cast="out"), doc="a + b, broadcasting.")
_sub = define("sub", ufunc="subtract", infer=_arith_infer("sub"), kind=E, cost=CHEAP,
              identity=0.0, grads=(lambda g, a, b: g, lambda g, a, b: neg(g)),
              binding=alpha_binary, public=("sub", "subtract"),
              methods=("sub", "__sub__", "__rsub__"),
              onnx=Onnx("Sub", cast="out"), doc="a - b, broadcasting.")
_mul = define("mul", ufunc="multiply", infer=_arith_infer("mul"), kind=E, cost=CHEAP,
              identity=1, absorbing=0, commutative=True, mask_operand=True,
              grads=(lambda g, a, b: mul(g, b), lambda g, a, b: mul(g, a)),
              binding=binary, public=("mul", "multiply"),
              methods=("mul", "__mul__", "__rmul__", "mul_", "__imul__"),
              onnx=Onnx("Mul", cast="out"), doc="a * b, broadcasting.")
_div = define("div", ufunc="true_divide", infer=_div_infer, kind=E, cost=CHEAP,
              identity=1,
              grads=(lambda g, a, b: div(g, b), lambda g, a, b: neg(mul(div(g, b), div(a, b)))),
              binding=division, public=("div", "divide"),
              methods=("div", "__truediv__", "__rtruediv__"),
              onnx=Onnx("Div", cast="out"),
              doc="a / b (true division; integers give the default float dtype).")
_neg = define("neg", ufunc="negative", infer=inf.numeric("neg"), kind=E, cost=CHEAP,
              grads=(lambda g, x: neg(g),), binding=unary, public=("neg", "negative"),
              methods=("neg", "__neg__", "neg_"), onnx="Neg", doc="-x.")
add, sub, mul, div, neg = (op.binding for op in (_add, _sub, _mul, _div, _neg))


# --- powers -------------------------------------------------------------------------------
def _pow_grad_base(g, a, b):
    # PyTorch's rule: 0 where the exponent is 0 (not g * 0 * a ** -1: NaN at a = 0 or g = inf)
    return where(eq(b, 0.0), 0.0, mul(g, mul(b, pow(a, sub(b, 1.0)))))


def _pow_grad_exponent(g, a, b, *, out):
    # PyTorch's rule: a ** b * log(a), 0 where a == 0 and b >= 0 (NaN for a < 0 or NaN, as there)
    return mul(g, where(logical_and(eq(a, 0.0), ge(b, 0.0)), 0.0, mul(out, log(a))))


_pow = define("pow", ufunc="power", infer=inf.elementwise("pow"), kind=E,
              grads=(_pow_grad_base, _pow_grad_exponent), onnx=Onnx("Pow", cast="out"),
              public="pow", methods=("pow", "__pow__", "__rpow__"))


def _pow_scalar_forward(xp, x, exponent):
    # a power of a negative float base is ~10x slower than the multiplications it stands for
    if exponent == 2:
        return xp.multiply(x, x)
    if exponent == 3:
        return x * x * x
    if exponent == 1:
        return x.copy()
    if exponent == 0.5:
        return xp.sqrt(x)
    if exponent == -1 and is_floating(x.dtype):
        return xp.reciprocal(x)
    return xp.power(x, x.dtype.type(exponent) if is_floating(x.dtype) else exponent)


def _pow_scalar_out(xp, x, out, exponent):
    # `_pow_scalar_forward` written into `out` (a planned or pooled buffer, never `x`)
    if exponent == 2:
        return xp.multiply(x, x, out=out)
    if exponent == 3:
        xp.multiply(x, x, out=out)
        return xp.multiply(out, x, out=out)
    if exponent == 1:
        xp.copyto(out, x)
        return out
    if exponent == 0.5:
        return xp.sqrt(x, out=out)
    if exponent == -1 and x.dtype.kind == "f":
        return xp.reciprocal(x, out=out)
    return xp.power(x, x.dtype.type(exponent) if x.dtype.kind == "f" else exponent, out=out)


def _pow_scalar_grad(g, x, exponent):
    if exponent == 0:  # +0, as PyTorch (not g * 0: NaN where g is inf or NaN)
        return zeros_like(g)
    if exponent == 1:
        return g
    if exponent == 2:
        return mul(g, mul(x, 2.0))
    if exponent == 0.5:  # x ** -0.5 as PyTorch's rsqrt (-inf at -0.0, as sqrt's gradient)
        return mul(g, mul(div(1.0, sqrt(x)), 0.5))
    return mul(g, mul(pow(x, exponent - 1), float(exponent)))


def _pow_scalar_infer(x: Spec, exponent):
    if not is_floating(x.dtype) and (not float(exponent).is_integer() or exponent < 0):
        raise DTypeError(f"pow: a {x.dtype} tensor to the power {exponent} needs a float tensor")
    return x.shape, x.dtype


def _pow_scalar_decompose(x, exponent):
    if exponent == 2:
        return mul(x, x)
    if exponent == 3:
        return mul(mul(x, x), x)
    return None  # no cheaper composition


_pow_scalar = define("pow_scalar", forward=_pow_scalar_forward, forward_out=_pow_scalar_out,
                     infer=_pow_scalar_infer, kind=E,
                     grads=(_pow_scalar_grad,), grad_name="PowBackward0",
                     decompose=_pow_scalar_decompose, onnx=onnx_rules.pow_scalar)


@binds(_pow)
def pow(input: Tensor, exponent, *, out: Tensor | None = None) -> Tensor:
    """x ** exponent; a Python-number exponent is an attribute (x**2, x**3 lower to products)."""
    if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        x = as_tensor(input)
        if not is_floating(x.dtype) and (exponent < 0 or not float(exponent).is_integer()):
            x = cast(x, dtypes.default_float)
        result = apply1(_pow_scalar, x, exponent=exponent)
    else:
        a, b = pair(input, exponent)
        result = apply2(_pow, a, b)
    return result if out is None else write_out("pow", result, out)



# --- transcendental -----------------------------------------------------------------------
def _sigmoid_forward(xp, x):
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


# float32 tanh inside a fused kernel, where a libm call per element would lose to NumPy's SIMD
# loop; in float64 arithmetic only, so LLVM vectorizes it: exp(2c) for c = u clamped to
# [-10, 10] (tanh(10) rounds to 1.0f) as a degree-6 Taylor polynomial at 2c/1024 squared ten
# times (relative error ~2e-13), then 1 - 2 / (exp(2c) + 1); below |u| < 1e-4, where that
# cancels, u (1 - u^2 / 3); NaN stays NaN. Measured within 1 ulp of correctly rounded tanh
# (and of the ufunc) over float32, +-0 and +-inf included (tests/test_compiler_fused_tanh.py).
_EXP_TAYLOR = ("1.0 + y{j} * (1.0 + y{j} * (0.5 + y{j} * (1.0 / 6.0 + y{j} * (1.0 / 24.0 + "
               "y{j} * (1.0 / 120.0 + y{j} * (1.0 / 720.0))))))")
_TANH_KERNEL = Kernel(dtypes=("float32",), lines=(
    "u{j} = _f64({x})",
    "y{j} = min(max(u{j}, -10.0), 10.0) * (2.0 / 1024.0)",
    "e{j} = " + _EXP_TAYLOR,
    *(["e{j} = e{j} * e{j}"] * 10),
    "t{j} = _f32(u{j} * (1.0 - u{j} * u{j} / 3.0) if abs(u{j}) < 1e-4 else "
    "(1.0 - 2.0 / (e{j} + 1.0) if u{j} == u{j} else u{j}))",
))

_exp = define("exp", ufunc="exp", infer=inf.floating("exp"), kind=E, cost=SLOW,
              grads=(lambda g, x, *, out: mul(g, out),), binding=float_unary, public="exp",
              methods=("exp", "exp_"), onnx="Exp", doc="e ** x.")
_log = define("log", ufunc="log", infer=inf.floating("log"), kind=E, cost=SLOW,
              grads=(lambda g, x: div(g, x),), binding=float_unary, public="log",
              methods=("log", "log_"), onnx="Log", doc="Natural logarithm.")
_sqrt = define("sqrt", ufunc="sqrt", infer=inf.floating("sqrt"), kind=E, cost=SLOW,
               grads=(lambda g, x, *, out: div(g, mul(out, 2.0)),), binding=float_unary,
               public="sqrt", methods=("sqrt", "sqrt_"), onnx="Sqrt", doc="Square root.")
_tanh = define("tanh", ufunc="tanh", infer=inf.floating("tanh"), kind=E, cost=SLOW,
               kernel=_TANH_KERNEL, grads=(lambda g, x, *, out: tanh_backward(g, out),),
               binding=float_unary, public="tanh", methods=("tanh", "tanh_"), onnx="Tanh",
               doc="Hyperbolic tangent.")
_sigmoid = define("sigmoid", forward=_sigmoid_forward, infer=inf.floating("sigmoid"), kind=E,
                  grads=(lambda g, x, *, out: mul(g, mul(out, sub(1.0, out))),),
                  binding=float_unary, public="sigmoid", methods=("sigmoid", "sigmoid_"),
                  onnx="Sigmoid",
                  doc="1 / (1 + exp(-x)), computed without overflow.")
_abs = define("abs", ufunc="absolute", infer=inf.numeric("abs"), kind=E, cost=CHEAP,
              grads=(lambda g, x: mul(g, _sign_nan_zero(x)),), binding=unary,
              public=("abs", "absolute"),
              methods=("abs", "__abs__", "abs_"), onnx="Abs", doc="|x|.")
def _sign_nan_zero(x):
    # abs's gradient g * sgn(x) with PyTorch's sgn: 0 at NaN (a NaN made by x - x of an
    # infinite x would otherwise leak into that x's gradient); sign itself keeps NumPy's NaN
    return where(eq(x, x), sign(x), 0.0)


def _on_two_threads(fn, *arrays):
    """`fn(*arrays)` (an elementwise NumPy call taking `out=`) as two halves on two threads,
    for large contiguous NumPy arrays of one shape where that pays; else None. Each element is
    computed as one call computes it."""
    parallel = _parallel()
    first = arrays[0]
    if first.size < parallel.NUMPY_MIN_SIZE or not (
            parallel.numpy_halves_pay(*arrays)
            and all(a.flags.c_contiguous and a.shape == first.shape for a in arrays)):
        return None
    return parallel.split_ufunc(fn, numpy_backend.xp.empty(first.shape, first.dtype), *arrays)


def _parallel():
    global _parallel

    _parallel = lambda: parallel  # noqa: E731  (resolved once)
    return parallel


def _relu_forward(xp, x):
    out = _on_two_threads(_relu_into, x)
    return xp.maximum(x, 0) if out is None else out


def _relu_into(x, out):
    return numpy_backend.xp.maximum(x, 0, out=out)


def _relu_backward_forward(xp, g, x):
    out = _on_two_threads(_relu_backward_into, g, x) if g.dtype == x.dtype else None
    if out is not None:
        return out
    if xp is numpy_backend.xp and g.dtype == x.dtype and g.dtype in BITMASK_DTYPES \
            and g.shape == x.shape:
        return relu_backward_out(xp, g, x, _pool.empty(x.shape, g.dtype))  # reused buffers
    return xp.where(x <= 0, xp.zeros((), g.dtype), g)


def _relu_backward_into(g, x, out):
    return relu_backward_out(numpy_backend.xp, g, x, out)


_relu = define("relu", forward=_relu_forward, infer=inf.numeric("relu"),
               kind=E, grads=(lambda g, x: relu_backward(g, x),), binding=unary_no_out,
               public="relu",
               methods=("relu", "relu_"), forward_out=lambda xp, x, out: xp.maximum(x, 0, out=out),
               onnx="Relu", doc="max(x, 0).")
_sign = define("sign", ufunc="sign", infer=inf.numeric("sign"), kind=E, binding=unary,
               grads=(lambda g, x: zeros_like(g),),  # piecewise constant, as in PyTorch
               public="sign", methods=("sign", "sign_"), onnx="Sign",
               doc="-1, 0 or 1 by the sign of x (zero gradient).")
exp, log, sqrt, tanh, sigmoid, abs, relu, sign = (
    op.binding for op in (_exp, _log, _sqrt, _tanh, _sigmoid, _abs, _relu, _sign))


# relu's gradient as one op (PyTorch's threshold_backward): one pass, not three
_relu_backward = define(
    "relu_backward", forward=_relu_backward_forward,
    infer=inf.elementwise("relu_backward"), kind=E,
    grads=(lambda gg, g, x: relu_backward(gg, x), None),  # zero almost everywhere in x
    forward_out=relu_backward_out,
    binding=binary, public="relu_backward", onnx=onnx_rules.relu_backward,
    doc="0 where x <= 0, else g (NaN included): the gradient of relu at x.",
)
relu_backward = _relu_backward.binding


# tanh's gradient g * (1 - y*y): eagerly one pass; the compiler fuses the same expression,
# evaluated on dongjing ops (decompose="forward")
def _tanh_backward_out(xp, g, y, out):
    # the forward's three steps, written into `out` (a planned buffer: never an input's)
    xp.multiply(y, y, out=out)
    xp.subtract(1, out, out=out)
    return xp.multiply(g, out, out=out)


_tanh_backward = define(
    "tanh_backward", forward=lambda xp, g, y: g * (1 - y * y), forward_out=_tanh_backward_out,
    infer=inf.elementwise("tanh_backward"), kind=E,
    grads=(lambda gg, g, y: tanh_backward(gg, y), lambda gg, g, y: mul(mul(gg, g), mul(y, -2.0))),
    decompose="forward", binding=binary, public="tanh_backward", onnx=onnx_rules.tanh_backward,
    doc="g * (1 - y**2): the gradient of tanh given its output y.",
)
tanh_backward = _tanh_backward.binding


# --- maximum, minimum, where, clip ---------------------------------------------------------
def _extremum_grads(pick):
    # PyTorch's rule: where(a == b, g / 2, g), then +0 where the other input wins (a fill, not
    # a product with a mask: an inf or NaN g must not leak into the input that lost); with a
    # NaN on either side both inputs get the whole gradient
    def grad(g, a, b):
        return where(pick(b, a), 0.0, where(eq(a, b), mul(g, 0.5), g))

    return (lambda g, a, b: grad(g, a, b), lambda g, a, b: grad(g, b, a))


_maximum = define("maximum", ufunc="maximum", infer=inf.elementwise("maximum"), kind=E,
                  cost=CHEAP, grads=_extremum_grads(lambda a, b: gt(a, b)), binding=binary,
                  public="maximum", methods="maximum", onnx=Onnx("Max", cast="out"),
                  doc="The larger of a and b, elementwise.")
_minimum = define("minimum", ufunc="minimum", infer=inf.elementwise("minimum"), kind=E,
                  cost=CHEAP, grads=_extremum_grads(lambda a, b: lt(a, b)), binding=binary,
                  public="minimum", methods="minimum", onnx=Onnx("Min", cast="out"),
                  doc="The smaller of a and b, elementwise.")
maximum, minimum = _maximum.binding, _minimum.binding


def _where_infer(c: Spec, a: Spec, b: Spec):
    if c.dtype.kind != "b":
        raise DTypeError(f"where: condition must be a bool tensor, got {c.dtype}")
    return inf.broadcast("where", c.shape, a.shape, b.shape), dtypes.promote(a.dtype, b.dtype)


_where = define("where", forward=lambda xp, c, a, b: xp.where(c, a, b), infer=_where_infer, kind=E,
                grads=(None,
                       lambda g, c, a, b: where(c, g, as_tensor(0.0, g)),
                       lambda g, c, a, b: where(c, as_tensor(0.0, g), g)),
                onnx=onnx_rules.where, public=("where",))


@overload
def where(condition: Tensor, input: None = None, other: None = None, *,
          out: Tensor | None = None) -> tuple[Tensor, ...]: ...
@overload
def where(condition: Tensor, input: TensorLike, other: TensorLike, *,
          out: Tensor | None = None) -> Tensor: ...


@binds(_where)
def where(condition: Tensor, input: TensorLike | None = None, other: TensorLike | None = None,
          *, out: Tensor | None = None) -> Tensor | tuple[Tensor, ...]:
    """Elementwise `input if condition else other`; `where(condition)` alone is
    `nonzero(condition, as_tuple=True)`."""
    if out is not None:
        return write_out("where", where(condition, input, other), out)
    if input is None and other is None:
        # ops.nonzero is composed of where's neighbours (index, scan), built on this module
        return late.ops.nonzero(condition, as_tuple=True)
    condition = as_tensor(condition)
    a, b = pair(input, other)
    if condition.dtype.kind != "b":
        condition = cast(condition, dtypes.bool_)
    return apply(_where, condition, a, b)



def _clip_forward(xp, x, min=None, max=None):
    return xp.clip(x, min, max).astype(x.dtype, copy=False)


def _clip_grad(g, x, min=None, max=None):
    keep = None
    if min is not None:
        keep = ge(x, min)
    if max is not None:
        upper = le(x, max)
        keep = upper if keep is None else logical_and(keep, upper)
    return g if keep is None else where(keep, g, as_tensor(0.0, g))


_clip = define("clip", forward=_clip_forward, infer=lambda x, min=None, max=None: inf.same(x),
               grads=(_clip_grad,), kind=E, grad_name="ClampBackward1", onnx=onnx_rules.clip,
               methods=("clip", "clamp"), public=("clip", "clamp"))


@binds(_clip)
@accepts_out
def clip(input: Tensor, min=None, max=None) -> Tensor:
    """Clamp every element into [min, max] (either bound may be None).

    As in PyTorch, a float bound promotes an integer or bool tensor to the default float dtype.
    """
    x = as_tensor(input)
    if x.dtype.kind in "biu" and any(isinstance(b, float) for b in (min, max)):
        x = cast(x, dtypes.default_float)
    return apply1(_clip, x, min=min, max=max)

clamp = clip


# --- casts, copies, fills --------------------------------------------------------------------
def _cast_infer(x: Spec, dtype):
    return x.shape, dtype


_cast = define("cast", forward=lambda xp, x, dtype: x.astype(dtype), infer=_cast_infer, kind=E,
               grads=(lambda g, x, dtype: cast(g, x.dtype),), grad_name="ToCopyBackward0",
               forward_out=lambda xp, x, out, dtype: xp.copyto(out, x, casting="unsafe"),
               onnx=onnx_rules.cast, public=("cast",))


@binds(_cast)
def cast(x, dtype):
    """`x` converted to `dtype` (a copy); gradients flow between float dtypes."""
    x = as_tensor(x)
    dtype = dtypes.as_dtype(dtype)
    if x._node is None and x._data.dtype == dtype:
        return x
    if x.requires_grad and not is_floating(dtype):
        with _no_grad():
            return apply1(_cast, x, dtype=dtype)
    return apply1(_cast, x, dtype=dtype)



def _no_grad():
    return no_grad()


_clone = define("clone", forward=lambda xp, x: x.copy(), infer=lambda x: inf.same(x), kind=E,
                grads=(lambda g, x: g,), binding=unary, public="clone", methods="clone",
                onnx="Identity", doc="A copy of `x` that stays on the tape.")
clone = _clone.binding


def _fill_like_forward(xp, x, value, dtype=None):
    return xp.full(x.shape, value, dtype=dtype or x.dtype)


_fill_like = define(
    "fill_like", forward=_fill_like_forward,
    infer=lambda x, value, dtype=None: (x.shape, dtype or x.dtype), kind=E,
    onnx=onnx_rules.fill_like, public="full_like",
)


@binds(_fill_like)
def full_like(x, value, dtype=None):
    """A tensor of `x`'s shape filled with `value` (works on symbolic tensors too)."""
    return apply1(_fill_like, as_tensor(x), value=value,
                  dtype=None if dtype is None else dtypes.as_dtype(dtype))


def zeros_like(x, dtype=None):
    """Zeros shaped like `x`."""
    return full_like(x, 0, dtype)


def ones_like(x, dtype=None):
    """Ones shaped like `x`."""
    return full_like(x, 1, dtype)


_stop_gradient = define("stop_gradient", forward=lambda xp, x: x, infer=lambda x: inf.same(x),
                        kind=E, onnx="Identity", public=("stop_gradient",))


@binds(_stop_gradient)
def stop_gradient(x):
    """`x`, with no gradient flowing back through it (`detach` of a symbolic tensor)."""
    return apply1(_stop_gradient, as_tensor(x))

