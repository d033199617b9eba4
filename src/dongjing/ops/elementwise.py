"""Elementwise primitives: arithmetic, transcendental, comparison, selection and casts."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .. import infer as inf
from ..dispatch import apply, apply1, apply2
from ..errors import DTypeError
from ..registry import Spec, register
from .broadcast import sum_to_shape
from .compare import eq, ge, gt, le, logical_and, lt
from .convert import as_tensor, pair

E = "elementwise"


# --- arithmetic ---------------------------------------------------------------------------
def _add_vjp(g, inputs, out, needs, attrs):
    a, b = inputs
    return (sum_to_shape(g, a.shape) if needs[0] else None,
            sum_to_shape(g, b.shape) if needs[1] else None)


def _sub_vjp(g, inputs, out, needs, attrs):
    a, b = inputs
    return (sum_to_shape(g, a.shape) if needs[0] else None,
            sum_to_shape(neg(g), b.shape) if needs[1] else None)


def _mul_vjp(g, inputs, out, needs, attrs):
    a, b = inputs
    return (sum_to_shape(mul(g, b), a.shape) if needs[0] else None,
            sum_to_shape(mul(g, a), b.shape) if needs[1] else None)


def _div_vjp(g, inputs, out, needs, attrs):
    a, b = inputs
    ga = div(g, b)
    return (sum_to_shape(ga, a.shape) if needs[0] else None,
            sum_to_shape(neg(mul(ga, div(a, b))), b.shape) if needs[1] else None)


def _divide(a, b):
    return np.true_divide(a, b)


def _arith_infer(name):
    base = inf.elementwise(name)

    def infer(a: Spec, b: Spec, **attrs):
        shape, dtype = base(a, b)
        if dtype.kind == "b" and name in ("sub",):
            raise DTypeError(f"{name}: not defined for bool tensors; use logical_xor")
        return shape, dtype

    return infer


def _div_infer(a: Spec, b: Spec):
    shape, dtype = inf.elementwise("div")(a, b)
    return shape, dtype if dtype.kind == "f" else dtypes.default_float


_add = register("add", forward=np.add, infer=_arith_infer("add"), vjp=_add_vjp, kind=E,
                ufunc=np.add)
_sub = register("sub", forward=np.subtract, infer=_arith_infer("sub"), vjp=_sub_vjp, kind=E,
                ufunc=np.subtract)
_mul = register("mul", forward=np.multiply, infer=_arith_infer("mul"), vjp=_mul_vjp, kind=E,
                ufunc=np.multiply)
_div = register("div", forward=_divide, infer=_div_infer, vjp=_div_vjp, kind=E,
                ufunc=np.true_divide)
_neg = register(
    "neg", forward=np.negative, infer=lambda x: inf.same(x),
    vjp=lambda g, inputs, out, needs, attrs: (neg(g),), kind=E, ufunc=np.negative,
)


def add(a, b) -> Tensor:  # noqa: F821
    """a + b, broadcasting."""
    a, b = pair(a, b)
    return apply2(_add, a, b)


def sub(a, b):
    """a - b, broadcasting."""
    a, b = pair(a, b)
    return apply2(_sub, a, b)


def mul(a, b):
    """a * b, broadcasting."""
    a, b = pair(a, b)
    return apply2(_mul, a, b)


def div(a, b):
    """a / b (true division; integers give float32)."""
    a, b = pair(a, b)
    if a.dtype.kind != "f":
        a, b = cast(a, dtypes.default_float), cast(b, dtypes.default_float)
    return apply2(_div, a, b)


def neg(x):
    """-x."""
    return apply1(_neg, as_tensor(x))


# --- powers -------------------------------------------------------------------------------
def _pow_vjp(g, inputs, out, needs, attrs):
    a, b = inputs
    ga = gb = None
    if needs[0]:
        ga = sum_to_shape(mul(g, mul(b, pow(a, sub(b, 1.0)))), a.shape)
    if needs[1]:
        safe = where(gt(a, 0.0), a, 1.0)
        gb = sum_to_shape(mul(g, mul(out, log(safe))), b.shape)
    return ga, gb


def _pow_infer(a: Spec, b: Spec):
    return inf.elementwise("pow")(a, b)


_pow = register("pow", forward=np.power, infer=_pow_infer, vjp=_pow_vjp, kind=E,
                saves_output=True, ufunc=np.power)


def _pow_scalar_forward(x, exponent):
    # np.power on negative float bases is ~10x slower than the multiplications it stands for
    if exponent == 2:
        return np.multiply(x, x)
    if exponent == 3:
        return x * x * x
    if exponent == 1:
        return x.copy()
    if exponent == 0.5:
        return np.sqrt(x)
    if exponent == -1:
        return np.reciprocal(x) if x.dtype.kind == "f" else np.power(x, exponent)
    return np.power(x, x.dtype.type(exponent) if x.dtype.kind == "f" else exponent)


def _pow_scalar_vjp(g, inputs, out, needs, attrs):
    (x,) = inputs
    p = attrs["exponent"]
    if p == 0:
        return (mul(g, 0.0),)
    if p == 1:
        return (g,)
    if p == 2:
        return (mul(g, mul(x, 2.0)),)
    return (mul(g, mul(pow(x, p - 1), float(p))),)


def _pow_scalar_infer(x: Spec, exponent):
    if x.dtype.kind != "f" and (not float(exponent).is_integer() or exponent < 0):
        return x.shape, dtypes.default_float
    return x.shape, x.dtype


def _pow_scalar_decompose(x, exponent):
    if exponent == 2:
        return mul(x, x)
    if exponent == 3:
        return mul(mul(x, x), x)
    return None  # no cheaper composition


_pow_scalar = register("pow_scalar", forward=_pow_scalar_forward, infer=_pow_scalar_infer,
                       vjp=_pow_scalar_vjp, kind=E, grad_name="PowBackward0",
                       decompose=_pow_scalar_decompose)


def pow(x, exponent):
    """x ** exponent; a Python-number exponent is an attribute (x**2, x**3 lower to products)."""
    if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        x = as_tensor(x)
        if x.dtype.kind != "f" and (exponent < 0 or not float(exponent).is_integer()):
            x = cast(x, dtypes.default_float)
        return apply1(_pow_scalar, x, exponent=exponent)
    a, b = pair(x, exponent)
    return apply2(_pow, a, b)


# --- transcendental -----------------------------------------------------------------------
def _unary(name, forward, vjp, saves_output=False, floats_only=True, forward_out=None):
    infer = inf.floating(name) if floats_only else (lambda x: inf.same(x))
    ufunc = forward if isinstance(forward, np.ufunc) else None
    return register(name, forward=forward, infer=infer, vjp=vjp, kind=E,
                    saves_output=saves_output, ufunc=ufunc, forward_out=forward_out)


def _sigmoid_forward(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


_exp = _unary("exp", np.exp, lambda g, i, out, n, a: (mul(g, out),), saves_output=True)
_log = _unary("log", np.log, lambda g, i, out, n, a: (div(g, i[0]),))
_sqrt = _unary("sqrt", np.sqrt, lambda g, i, out, n, a: (div(g, mul(out, 2.0)),),
               saves_output=True)
_tanh = _unary("tanh", np.tanh, lambda g, i, out, n, a: (tanh_backward(g, out),),
               saves_output=True)
_sigmoid = _unary("sigmoid", _sigmoid_forward,
                  lambda g, i, out, n, a: (mul(g, mul(out, sub(1.0, out))),), saves_output=True)
_abs = _unary("abs", np.abs, lambda g, i, out, n, a: (mul(g, sign(i[0])),), floats_only=False)
_relu = _unary(
    "relu", lambda x: np.maximum(x, 0),
    lambda g, i, out, n, a: (relu_backward(g, i[0]),), floats_only=False,
    forward_out=lambda x, out: np.maximum(x, 0, out=out),
)


def _relu_backward_forward(g, x):
    return np.multiply(g, x > 0)


def _relu_backward_out(g, x, out):
    return np.multiply(g, x > 0, out=out)


def _relu_backward_vjp(gg, inputs, out, needs, attrs):
    g, x = inputs
    return (relu_backward(gg, x) if needs[0] else None, None)  # zero almost everywhere in x


# relu's gradient g * (x > 0) as one op (PyTorch's threshold_backward): one pass, not three
_relu_backward = register(
    "relu_backward", forward=_relu_backward_forward, infer=inf.elementwise("relu_backward"),
    vjp=_relu_backward_vjp, kind=E, forward_out=_relu_backward_out,
)


def relu_backward(g, x):
    """g where x > 0, else 0: the gradient of relu at x."""
    return apply2(_relu_backward, g, x)
_sign = register("sign", forward=np.sign, infer=lambda x: inf.same(x), kind=E, ufunc=np.sign)


def _tanh_backward_forward(g, y):
    return g * (1 - y * y)


def _tanh_backward_vjp(gg, inputs, out, needs, attrs):
    g, y = inputs
    return (tanh_backward(gg, y) if needs[0] else None,
            mul(mul(gg, g), mul(y, -2.0)) if needs[1] else None)


# tanh's gradient g * (1 - y*y) as one op: a single pass in eager backward (W5 runs it per step)
_tanh_backward = register("tanh_backward", forward=_tanh_backward_forward,
                          infer=inf.elementwise("tanh_backward"), vjp=_tanh_backward_vjp, kind=E,
                          decompose=lambda g, y: mul(g, sub(1.0, mul(y, y))))


def tanh_backward(g, y):
    """g * (1 - y**2): the gradient of tanh given its output y."""
    return apply2(_tanh_backward, g, y)


def exp(x):
    """e ** x."""
    return apply1(_exp, _float(x))


def log(x):
    """Natural logarithm."""
    return apply1(_log, _float(x))


def sqrt(x):
    return apply1(_sqrt, _float(x))


def tanh(x):
    return apply1(_tanh, _float(x))


def sigmoid(x):
    """1 / (1 + exp(-x)), computed without overflow."""
    return apply1(_sigmoid, _float(x))


def abs(x):
    return apply1(_abs, as_tensor(x))


def relu(x):
    """max(x, 0)."""
    return apply1(_relu, as_tensor(x))


def sign(x):
    return apply1(_sign, as_tensor(x))


def _float(x):
    x = as_tensor(x)
    return x if x.dtype.kind == "f" else cast(x, dtypes.default_float)


# --- maximum, minimum, where, clip ---------------------------------------------------------
def _extremum_vjp(pick):
    def vjp(g, inputs, out, needs, attrs):
        a, b = inputs
        # ties split the gradient evenly, as PyTorch does
        w = add(cast(pick(a, b), g.dtype), mul(cast(eq(a, b), g.dtype), 0.5))
        return (sum_to_shape(mul(g, w), a.shape) if needs[0] else None,
                sum_to_shape(mul(g, sub(1.0, w)), b.shape) if needs[1] else None)

    return vjp


_maximum = register("maximum", forward=np.maximum, infer=inf.elementwise("maximum"),
                    vjp=_extremum_vjp(lambda a, b: gt(a, b)), kind=E, ufunc=np.maximum)
_minimum = register("minimum", forward=np.minimum, infer=inf.elementwise("minimum"),
                    vjp=_extremum_vjp(lambda a, b: lt(a, b)), kind=E, ufunc=np.minimum)


def maximum(a, b):
    a, b = pair(a, b)
    return apply2(_maximum, a, b)


def minimum(a, b):
    a, b = pair(a, b)
    return apply2(_minimum, a, b)


def _where_infer(c: Spec, a: Spec, b: Spec):
    if c.dtype.kind != "b":
        raise DTypeError(f"where: condition must be a bool tensor, got {c.dtype}")
    return inf.broadcast("where", c.shape, a.shape, b.shape), dtypes.promote(a.dtype, b.dtype)


def _where_vjp(g, inputs, out, needs, attrs):
    c, a, b = inputs
    zero = as_tensor(0.0, g)
    return (None,
            sum_to_shape(where(c, g, zero), a.shape) if needs[1] else None,
            sum_to_shape(where(c, zero, g), b.shape) if needs[2] else None)


_where = register("where", forward=np.where, infer=_where_infer, vjp=_where_vjp, kind=E)


def where(condition, a, b):
    """Elementwise `a if condition else b`."""
    condition = as_tensor(condition)
    a, b = pair(a, b)
    if condition.dtype.kind != "b":
        condition = cast(condition, dtypes.bool_)
    return apply(_where, condition, a, b)


def _clip_forward(x, min=None, max=None):
    return np.clip(x, min, max).astype(x.dtype, copy=False)


def _clip_vjp(g, inputs, out, needs, attrs):
    (x,) = inputs
    keep = None
    if attrs.get("min") is not None:
        keep = ge(x, attrs["min"])
    if attrs.get("max") is not None:
        upper = le(x, attrs["max"])
        keep = upper if keep is None else logical_and(keep, upper)
    return (g if keep is None else where(keep, g, as_tensor(0.0, g)),)


_clip = register("clip", forward=_clip_forward, infer=lambda x, min=None, max=None: inf.same(x),
                 vjp=_clip_vjp, kind=E, grad_name="ClampBackward1")


def clip(x, min=None, max=None):
    """Clamp every element into [min, max] (either bound may be None)."""
    return apply1(_clip, as_tensor(x), min=min, max=max)


clamp = clip


# --- casts, copies, fills --------------------------------------------------------------------
def _cast_vjp(g, inputs, out, needs, attrs):
    (x,) = inputs
    return (cast(g, x.dtype),)


def _cast_infer(x: Spec, dtype):
    return x.shape, dtype


def _cast_forward(x, dtype):
    return x.astype(dtype)


_cast = register("cast", forward=_cast_forward, infer=_cast_infer, vjp=_cast_vjp, kind=E,
                 grad_name="ToCopyBackward0",
                 forward_out=lambda x, out, dtype: np.copyto(out, x, casting="unsafe"))


def cast(x, dtype):
    """`x` converted to `dtype` (a copy); gradients flow between float dtypes."""
    x = as_tensor(x)
    dtype = dtypes.as_dtype(dtype)
    if x._node is None and x.data.dtype == dtype:
        return x
    if x.requires_grad and dtype.kind != "f":
        with _no_grad():
            return apply1(_cast, x, dtype=dtype)
    return apply1(_cast, x, dtype=dtype)


def _no_grad():
    from ..autograd.grad_mode import no_grad

    return no_grad()


_clone = register("clone", forward=np.copy, infer=lambda x: inf.same(x),
                  vjp=lambda g, i, out, n, a: (g,), kind=E)


def clone(x):
    """A copy of `x` that stays on the tape."""
    return apply1(_clone, as_tensor(x))


def _fill_like_forward(x, value, dtype=None):
    return np.full(x.shape, value, dtype=dtype or x.dtype)


_fill_like = register(
    "fill_like", forward=_fill_like_forward,
    infer=lambda x, value, dtype=None: (x.shape, dtype or x.dtype), kind=E,
)


def full_like(x, value, dtype=None):
    """A tensor of `x`'s shape filled with `value` (works on symbolic tensors too)."""
    return apply1(_fill_like, as_tensor(x), value=value,
                  dtype=None if dtype is None else dtypes.as_dtype(dtype))


def zeros_like(x, dtype=None):
    return full_like(x, 0, dtype)


def ones_like(x, dtype=None):
    return full_like(x, 1, dtype)


_stop_gradient = register("stop_gradient", forward=lambda x: x, infer=lambda x: inf.same(x),
                          kind=E)


def stop_gradient(x):
    """`x`, with no gradient flowing back through it (`detach` of a symbolic tensor)."""
    return apply1(_stop_gradient, as_tensor(x))
