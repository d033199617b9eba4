"""More elementwise math: trigonometric and hyperbolic functions, log/exp variants, rounding,
floor division and remainder (PyTorch's sign rules), atan2 and the NaN/Inf predicates.

Each op is one `define(...)`; the rules are written with dongjing ops so they are themselves
differentiable.
"""

from __future__ import annotations

import math

from .. import dtypes
from ..core import infer as inf
from ..core.registry import Cost, Kind, Spec, binds, define
from ..dispatch import apply1
from ..dtypes import is_floating
from ..errors import DTypeError
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out
from . import onnx_rules
from .bindings import binary, float_binary, float_unary, predicate, reflected, unary
from .convert import as_tensor
from .elementwise import add, div, mul, neg, sqrt, sub, zeros_like

E = Kind.ELEMENTWISE
CHEAP = Cost.CHEAP
SLOW = Cost.TRANSCENDENTAL
_NO_ONNX = "no single ONNX operator computes it"


def _float_op(name, ufunc, grad, onnx=None, doc=""):
    return define(name, ufunc=ufunc, infer=inf.floating(name), kind=E, cost=SLOW, grads=(grad,),
                  binding=float_unary, public=name, methods=name, onnx=onnx,
                  onnx_reason=None if onnx else _NO_ONNX, doc=doc)


def _one_minus_sq_root(x):
    return sqrt(sub(1.0, mul(x, x)))


_sin = _float_op("sin", "sin", lambda g, x: mul(g, cos(x)), "Sin", "Sine (radians).")
_cos = _float_op("cos", "cos", lambda g, x: neg(mul(g, sin(x))), "Cos", "Cosine (radians).")
_tan = _float_op("tan", "tan", lambda g, x, *, out: mul(g, add(mul(out, out), 1.0)), "Tan",
                 "Tangent (radians).")
_asin = _float_op("asin", "arcsin", lambda g, x: div(g, _one_minus_sq_root(x)), "Asin",
                  "Inverse sine.")
_acos = _float_op("acos", "arccos", lambda g, x: neg(div(g, _one_minus_sq_root(x))), "Acos",
                  "Inverse cosine.")
_atan = _float_op("atan", "arctan", lambda g, x: div(g, add(mul(x, x), 1.0)), "Atan",
                  "Inverse tangent.")
_sinh = _float_op("sinh", "sinh", lambda g, x: mul(g, cosh(x)), "Sinh", "Hyperbolic sine.")
_cosh = _float_op("cosh", "cosh", lambda g, x: mul(g, sinh(x)), "Cosh", "Hyperbolic cosine.")
_log1p = _float_op("log1p", "log1p", lambda g, x: div(g, add(x, 1.0)),
                   doc="log(1 + x), accurate for small x.")
_expm1 = _float_op("expm1", "expm1", lambda g, x, *, out: mul(g, add(out, 1.0)),
                   doc="exp(x) - 1, accurate for small x.")
_log2 = _float_op("log2", "log2", lambda g, x: div(g, mul(x, math.log(2.0))),
                  doc="Base-2 logarithm.")
_log10 = _float_op("log10", "log10", lambda g, x: div(g, mul(x, math.log(10.0))),
                   doc="Base-10 logarithm.")
sin, cos, tan, asin, acos, atan, sinh, cosh, log1p, expm1, log2, log10 = (
    op.binding for op in (_sin, _cos, _tan, _asin, _acos, _atan, _sinh, _cosh, _log1p, _expm1,
                          _log2, _log10))
arcsin, arccos, arctan = asin, acos, atan


# --- rounding: piecewise constant, so the gradient is zero (as in PyTorch) --------------------
def _zero_grad(g, *inputs, **attrs):
    return zeros_like(g)


def _rounding(name, ufunc, onnx, doc):
    # an integer tensor is already rounded: the forward keeps it (and its dtype) as it is
    def forward(xp, x, decimals=0):
        if not is_floating(x.dtype):
            return x.copy()
        return getattr(xp, ufunc)(x) if not decimals else xp.round(x, decimals)

    return define(name, forward=forward, infer=inf.numeric(name), kind=E, cost=CHEAP,
                  grads=(_zero_grad,), binding=None if name == "round" else unary,
                  public=name, methods=name,
                  onnx=onnx_rules.same_if_integer(onnx) if onnx else None,
                  onnx_reason=None if onnx else _NO_ONNX, doc=doc)


_floor = _rounding("floor", "floor", "Floor", "Largest integer <= x (zero gradient).")
_ceil = _rounding("ceil", "ceil", "Ceil", "Smallest integer >= x (zero gradient).")
_round = _rounding("round", "round", "Round",
                   "Nearest integer, halves to even as in PyTorch (zero gradient).")
_trunc = _rounding("trunc", "trunc", None, "x rounded toward zero (zero gradient).")
floor, ceil, trunc = (op.binding for op in (_floor, _ceil, _trunc))


@binds(_round)
@accepts_out
def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """Nearest integer, halves to even (zero gradient); `decimals` rounds to that many decimal
    places (negative: to tens, hundreds...), as PyTorch's."""
    x = as_tensor(input)
    if decimals and not is_floating(x.dtype):
        raise DTypeError(f"round: decimals= needs a floating point tensor, got {x.dtype}")
    return apply1(_round, x, decimals=int(decimals)) if decimals else apply1(_round, x)


# --- floor division and remainder -----------------------------------------------------------
def _integer_division_infer(name):
    base = inf.elementwise(name)

    def infer(a: Spec, b: Spec):
        shape, dtype = base(a, b)
        if dtype.kind == "b":
            raise DTypeError(f"{name}: not defined for bool tensors")
        return shape, dtype

    return infer


def _checked(name, fn):
    """Integer division by zero raises (as PyTorch does) instead of NumPy's silent 0."""

    def forward(xp, a, b):
        if b.dtype.kind in "iu" and not xp.all(b):
            raise ZeroDivisionError(f"{name}: integer division by zero")
        return getattr(xp, fn)(a, b)

    return forward


_floor_divide = define(
    "floor_divide", forward=_checked("floor_divide", "floor_divide"),
    infer=_integer_division_infer("floor_divide"), kind=E, cost=CHEAP,
    grads=(_zero_grad, _zero_grad), binding=binary, public="floor_divide",
    methods=("floor_divide", "__floordiv__"), onnx=None, onnx_reason=_NO_ONNX,
    doc="a // b: the quotient rounded toward minus infinity (zero gradient).")
def _remainder_forward(xp, a, b):
    out = _checked("remainder", "remainder")(xp, a, b)
    if out.dtype.kind != "f":
        return out
    # PyTorch's zero remainder is fmod's, signed as a; NumPy's is signed as b (1 / r and
    # log's gradient see the sign)
    return xp.where(out == 0, xp.copysign(out, a), out)


_remainder = define(
    "remainder", forward=_remainder_forward,
    infer=_integer_division_infer("remainder"), kind=E, cost=CHEAP,
    grads=(lambda g, a, b: g, lambda g, a, b: neg(mul(g, floor_divide(a, b)))),
    binding=binary, public="remainder", methods=("remainder", "__mod__"),
    onnx=onnx_rules.remainder,
    doc="a % b with the sign of b (Python's and PyTorch's rule): a - b * floor(a / b).")
floor_divide, remainder = _floor_divide.binding, _remainder.binding


def _atan2_grad(g, a, b, *, swap):
    r2 = add(mul(a, a), mul(b, b))
    return neg(div(mul(g, a), r2)) if swap else div(mul(g, b), r2)


_atan2 = define(
    "atan2", ufunc="arctan2", infer=lambda a, b: inf.floating("atan2")(
        Spec(inf.broadcast("atan2", a.shape, b.shape), dtypes.promote(a.dtype, b.dtype))),
    kind=E, cost=SLOW,
    grads=(lambda g, a, b: _atan2_grad(g, a, b, swap=False),
           lambda g, a, b: _atan2_grad(g, a, b, swap=True)),
    binding=float_binary, public=("atan2", "arctan2"), methods=("atan2", "arctan2"),
    onnx=None, onnx_reason=_NO_ONNX,
    doc="The angle of the point (b, a): atan(a / b) in the right quadrant.")
atan2 = _atan2.binding


# --- predicates -------------------------------------------------------------------------------
def _predicate(name, ufunc, onnx, doc):
    def infer(x: Spec):
        return x.shape, dtypes.bool_

    def forward(xp, x):
        if not is_floating(x.dtype):  # integers are always finite
            return xp.full(x.shape, name == "isfinite", dtype=bool)
        return getattr(xp, ufunc)(x)

    return define(name, forward=forward, infer=infer, kind=E, cost=CHEAP, binding=predicate,
                  public=name, methods=name, onnx=onnx, onnx_reason=None if onnx else _NO_ONNX,
                  doc=doc)


_isnan = _predicate("isnan", "isnan", "IsNaN", "True where x is NaN.")
_isinf = _predicate("isinf", "isinf", "IsInf", "True where x is +inf or -inf.")
_isfinite = _predicate("isfinite", "isfinite", None, "True where x is neither NaN nor infinite.")
isnan, isinf, isfinite = _isnan.binding, _isinf.binding, _isfinite.binding


# the reflected operators need the operands swapped, which `methods=` does not do
Tensor.__rfloordiv__ = reflected(floor_divide)
Tensor.__rmod__ = reflected(remainder)
