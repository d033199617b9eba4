"""More of PyTorch's elementwise functions under their PyTorch names.

Primitives (one `define` each): the inverse hyperbolic functions (their own accurate ufuncs and
gradients), and the integer and bit functions NumPy computes exactly (`gcd`, `lcm`, the
bitwise ops, `signbit`, `nextafter`), which have no gradient. The rest are compositions of
primitives (`exp2`, `sinc`, `xlogy`, `logit`, `copysign`, `fmax`, `isclose`, ...), so they
differentiate, trace and build graph nodes with no rule of their own; the aliases
(`arccos`, `greater`, `fix`, ...) are the same functions under PyTorch's other names.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .. import dtypes
from ..core import infer as inf
from ..core.registry import Cost, Kind, Spec, define
from ..errors import DTypeError
from ..tensor.out_argument import accepts_out
from .bindings import binary, float_unary, unary
from .compare import eq, ge, gt, le, logical_and, logical_not, logical_or, lt, ne
from .convert import as_tensor, pair
from .elementwise import abs as _abs
from .elementwise import (
    add,
    cast,
    clip,
    div,
    exp,
    log,
    mul,
    neg,
    pow,
    sign,
    sqrt,
    sub,
    where,
    zeros_like,
)
from .math import acos, asin, atan, atan2, isfinite, isnan, sin, trunc
from .torch_compat_math import logaddexp

if TYPE_CHECKING:
    from ..tensor import Tensor
    from ..types import TensorLike

E = Kind.ELEMENTWISE
_NO_ONNX = "no single ONNX operator computes it; its expansion is not written yet"


def _inverse_hyperbolic(name, ufunc, grad, onnx):
    return define(name, ufunc=ufunc, infer=inf.floating(name), kind=E,
                  cost=Cost.TRANSCENDENTAL, grads=(grad,), binding=float_unary, public=name,
                  methods=(name, name + "_"), onnx=onnx, doc=f"Inverse hyperbolic {name[1:]}.")


_acosh = _inverse_hyperbolic("acosh", "arccosh",
                             lambda g, x: div(g, sqrt(sub(mul(x, x), 1.0))), "Acosh")
_asinh = _inverse_hyperbolic("asinh", "arcsinh",
                             lambda g, x: div(g, sqrt(add(mul(x, x), 1.0))), "Asinh")
_atanh = _inverse_hyperbolic("atanh", "arctanh",
                             lambda g, x: div(g, sub(1.0, mul(x, x))), "Atanh")
acosh, asinh, atanh = _acosh.binding, _asinh.binding, _atanh.binding


def _integer_infer(name):
    def infer(*specs: Spec):
        dtype = specs[0].dtype
        for s in specs[1:]:
            dtype = dtypes.promote(dtype, s.dtype)
        if dtype.kind not in "iub":
            raise DTypeError(f"{name}: expects integer or bool tensors, got {dtype}")
        return inf.broadcast(name, *(s.shape for s in specs)), dtype

    return infer


def _integer_op(name, ufunc, binding=binary, bools=True, doc=""):
    def infer(*specs: Spec):
        shape, dtype = _integer_infer(name)(*specs)
        if dtype.kind == "b" and not bools:
            raise DTypeError(f"{name}: expects integer tensors, got bool")
        return shape, dtype

    return define(name, ufunc=ufunc, infer=infer, kind=E, cost=Cost.CHEAP, binding=binding,
                  public=name, methods=(name, name + "_"), onnx=None, onnx_reason=_NO_ONNX,
                  doc=doc)


gcd = _integer_op("gcd", "gcd", bools=False, doc="Greatest common divisor (0 with 0 is 0).")
lcm = _integer_op("lcm", "lcm", bools=False, doc="Least common multiple.")
bitwise_and = _integer_op("bitwise_and", "bitwise_and", doc="Bitwise AND.")
bitwise_or = _integer_op("bitwise_or", "bitwise_or", doc="Bitwise OR.")
bitwise_xor = _integer_op("bitwise_xor", "bitwise_xor", doc="Bitwise XOR.")
bitwise_not = _integer_op("bitwise_not", "invert", unary, doc="Bitwise NOT (logical on bools).")
bitwise_left_shift = _integer_op("bitwise_left_shift", "left_shift", bools=False,
                                 doc="a << b.")
bitwise_right_shift = _integer_op("bitwise_right_shift", "right_shift", bools=False,
                                  doc="a >> b (arithmetic for signed integers).")
gcd, lcm, bitwise_and, bitwise_or, bitwise_xor, bitwise_not = (
    op.binding for op in (gcd, lcm, bitwise_and, bitwise_or, bitwise_xor, bitwise_not))
bitwise_left_shift, bitwise_right_shift = (bitwise_left_shift.binding,
                                           bitwise_right_shift.binding)

_signbit = define("signbit", ufunc="signbit", infer=inf.comparison("signbit"), kind=E,
                  cost=Cost.CHEAP, binding=unary, public="signbit", methods="signbit",
                  onnx=None, onnx_reason=_NO_ONNX,
                  doc="Whether the sign bit is set (true for -0.0 and negative numbers).")


def _nextafter_infer(a: Spec, b: Spec):
    spec = Spec(inf.broadcast("nextafter", a.shape, b.shape), dtypes.promote(a.dtype, b.dtype))
    if spec.dtype.kind != "f":
        raise DTypeError(f"nextafter: expects floating point tensors, got {spec.dtype}")
    return spec.shape, spec.dtype


_nextafter = define("nextafter", ufunc="nextafter", infer=_nextafter_infer, kind=E,
                    cost=Cost.CHEAP, binding=binary, public="nextafter",
                    methods=("nextafter", "nextafter_"), onnx=None, onnx_reason=_NO_ONNX,
                    doc="The next representable float after `input` towards `other`.")
signbit, nextafter = _signbit.binding, _nextafter.binding


# --- compositions ---------------------------------------------------------------------------
def _floating(x: TensorLike) -> Tensor:
    x = as_tensor(x)
    return x if x.dtype.kind == "f" else cast(x, dtypes.default_float)


@accepts_out
def exp2(input: TensorLike) -> Tensor:
    """2 ** input."""
    return exp(mul(_floating(input), math.log(2.0)))


@accepts_out
def deg2rad(input: TensorLike) -> Tensor:
    """Degrees to radians."""
    return mul(_floating(input), math.pi / 180.0)


@accepts_out
def rad2deg(input: TensorLike) -> Tensor:
    """Radians to degrees."""
    return mul(_floating(input), 180.0 / math.pi)


@accepts_out
def sinc(input: TensorLike) -> Tensor:
    """sin(pi x) / (pi x), 1 at 0 (the normalized sinc)."""
    x = _floating(input)
    zero = eq(x, 0.0)
    safe = where(zero, as_tensor(1.0, x), x) * math.pi
    return where(zero, as_tensor(1.0, x), div(sin(safe), safe))


@accepts_out
def xlogy(input: TensorLike, other: TensorLike) -> Tensor:
    """input * log(other), 0 where input is 0 (unless other is NaN); the gradient with respect
    to input is log(other), as PyTorch's."""
    x, y = pair(input, other)
    x, y = _floating(x), _floating(y)
    zero = logical_and(eq(x, 0.0), logical_not(isnan(y)))
    # where x is 0 and log(y) is not finite, log(1) keeps 0 * log(y) from being NaN
    unsafe = logical_and(zero, logical_or(le(y, 0.0), eq(y, float("inf"))))
    return mul(x, log(where(unsafe, as_tensor(1.0, y), y)))


@accepts_out
def logit(input: TensorLike, eps: float | None = None) -> Tensor:
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    p = _floating(input)
    if eps is not None:
        p = clip(p, eps, 1.0 - eps)
    return log(div(p, sub(1.0, p)))


@accepts_out
def copysign(input: TensorLike, other: TensorLike) -> Tensor:
    """|input| with the sign of `other` (-0.0 counts as negative)."""
    a, b = pair(input, other)
    a = _floating(a)
    magnitude = _abs(a)
    return where(signbit(b), neg(magnitude), magnitude)


@accepts_out
def float_power(input: TensorLike, exponent: TensorLike) -> Tensor:
    """input ** exponent in float64."""
    a, b = pair(input, exponent)
    return pow(cast(a, dtypes.float64), cast(b, dtypes.float64))


@accepts_out
def fmax(input: TensorLike, other: TensorLike) -> Tensor:
    """The elementwise maximum, ignoring NaN (NaN only where both are NaN)."""
    a, b = pair(input, other)
    return where(logical_or(ge(a, b), isnan(b)), a, b)


@accepts_out
def fmin(input: TensorLike, other: TensorLike) -> Tensor:
    """The elementwise minimum, ignoring NaN (NaN only where both are NaN)."""
    a, b = pair(input, other)
    return where(logical_or(le(a, b), isnan(b)), a, b)


@accepts_out
def heaviside(input: TensorLike, values: TensorLike) -> Tensor:
    """0 where input < 0, `values` where input == 0, 1 where input > 0 (no gradient)."""
    x, v = pair(input, values)
    step = cast(gt(x, 0), x.dtype)
    return where(eq(x, 0), v + zeros_like(x), step).detach()


@accepts_out
def ldexp(input: TensorLike, other: TensorLike) -> Tensor:
    """input * 2 ** other."""
    x = _floating(input)
    return mul(x, exp2(other))


@accepts_out
def logaddexp2(input: TensorLike, other: TensorLike) -> Tensor:
    """log2(2 ** input + 2 ** other), computed without overflow."""
    ln2 = math.log(2.0)
    return div(logaddexp(mul(_floating(input), ln2), mul(_floating(other), ln2)), ln2)


@accepts_out
def sgn(input: TensorLike) -> Tensor:
    """The sign (-1, 0, 1) of a real tensor (PyTorch's `sgn` extends `sign` to complex)."""
    return sign(as_tensor(input))


@accepts_out
def logical_xor(input: TensorLike, other: TensorLike) -> Tensor:
    """Elementwise exclusive or of the truth values."""
    a, b = pair(input, other)
    return ne(ne(a, 0), ne(b, 0))


def isclose(input: TensorLike, other: TensorLike, rtol: float = 1e-5, atol: float = 1e-8,
            equal_nan: bool = False) -> Tensor:
    """Equal, or both finite with |input - other| <= atol + rtol * |other|; NaNs are close to
    each other only with `equal_nan`."""
    a, b = pair(input, other)
    if a.dtype.kind != "f":
        a, b = cast(a, dtypes.float64), cast(b, dtypes.float64)
    near = le(_abs(sub(a, b)), add(mul(_abs(b), rtol), atol))
    close = logical_or(eq(a, b), logical_and(logical_and(isfinite(a), isfinite(b)), near))
    if equal_nan:
        close = logical_or(close, logical_and(isnan(a), isnan(b)))
    return close


def _all_false(x):
    zero = zeros_like(x)
    return ne(zero, zero)


@accepts_out
def isposinf(input: TensorLike) -> Tensor:
    """Whether each element is +inf."""
    x = as_tensor(input)
    return eq(x, float("inf")) if x.dtype.kind == "f" else _all_false(x)


@accepts_out
def isneginf(input: TensorLike) -> Tensor:
    """Whether each element is -inf."""
    x = as_tensor(input)
    return eq(x, float("-inf")) if x.dtype.kind == "f" else _all_false(x)


def isreal(input: TensorLike) -> Tensor:
    """Whether each element is real: always, for dongjing's real dtypes."""
    return logical_not(_all_false(as_tensor(input)))


def positive(input: TensorLike) -> Tensor:
    """`input` itself (unary plus); refused for bool tensors, as PyTorch does."""
    x = as_tensor(input)
    if x.dtype.kind == "b":
        raise DTypeError("positive: not defined for bool tensors")
    return x


@accepts_out
def angle(input: TensorLike) -> Tensor:
    """The argument of each element: 0 for non-negative reals, pi for negative ones (NaN stays
    NaN); its gradient is zero, as PyTorch's for real inputs."""
    x = _floating(input)
    return where(lt(x, 0.0), as_tensor(math.pi, x), as_tensor(0.0, x)) + mul(x, 0.0)


def real(input: TensorLike) -> Tensor:
    """The real part: the tensor itself, for dongjing's real dtypes."""
    return as_tensor(input)


conj = resolve_conj = resolve_neg = real


@accepts_out
def conj_physical(input):
    """The conjugate, materialized: the tensor itself, for dongjing's real dtypes."""
    return as_tensor(input)


def is_complex(input) -> bool:
    """False: dongjing's dtypes are real."""
    return False


is_conj = is_neg = is_distributed = is_complex


def is_signed(input) -> bool:
    """Whether the dtype holds negative numbers (floats and signed integers)."""
    return as_tensor(input).dtype.kind in "fi"


def is_nonzero(input) -> bool:
    """The truth of a one-element tensor."""
    return as_tensor(input).is_nonzero()


def is_same_size(input, other) -> bool:
    """Whether the two tensors have one shape."""
    return tuple(as_tensor(input).shape) == tuple(as_tensor(other).shape)


def get_device(input) -> int:
    """-1 on the CPU, else the index of the GPU holding the tensor."""
    return as_tensor(input).get_device()


@accepts_out
def fix(input: TensorLike) -> Tensor:
    """Round towards zero (an alias of `trunc`)."""
    return trunc(as_tensor(input))


arccos, arcsin, arctan, arccosh, arcsinh, arctanh = acos, asin, atan, acosh, asinh, atanh
arctan2 = atan2
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne

__all__ = ["acosh", "asinh", "atanh", "gcd", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor",
           "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "signbit", "nextafter",
           "exp2", "deg2rad", "rad2deg", "sinc", "xlogy", "logit", "copysign", "float_power",
           "fmax", "fmin", "heaviside", "ldexp", "logaddexp2", "sgn", "logical_xor", "isclose",
           "isposinf", "isneginf", "isreal", "positive", "angle", "real", "conj",
           "conj_physical", "resolve_conj", "resolve_neg", "fix", "arccos", "arcsin", "arctan",
           "arccosh", "arcsinh", "arctanh", "greater", "greater_equal", "less", "less_equal",
           "not_equal", "is_complex", "is_conj", "is_neg", "is_distributed", "is_signed",
           "is_nonzero", "is_same_size", "get_device"]
