"""More of PyTorch's activation functions (`F.softplus`, `F.selu`, `F.hardtanh`, `F.glu`, ...),
each a composition of dongjing ops, so it differentiates, traces and builds graph nodes with no
rule of its own. `inplace=True` writes the result into the input (as `F.relu` does)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from .. import ops
from ..errors import ArgumentError, ShapeError
from ..ops.convert import as_tensor
from ..tensor import Tensor
from ..tensor.inplace import run_inplace

if TYPE_CHECKING:
    from ..types import DTypeLike

__all__ = ["softplus", "logsigmoid", "mish", "hardtanh", "relu6", "hardsigmoid", "hardswish",
           "selu", "celu", "glu", "hardshrink", "softshrink", "softsign", "tanhshrink",
           "threshold", "softmin", "prelu", "rrelu", "hardtanh_", "elu_", "leaky_relu_",
           "relu_", "threshold_", "celu_", "selu_", "rrelu_"]

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _applied(input, name: str, compute, inplace: bool) -> Tensor:
    x = as_tensor(input)
    if inplace:
        return run_inplace(x, f"{name}_", compute)
    return compute(x)


def _stable_softplus(z: Tensor) -> Tensor:
    """log(1 + exp(z)) = max(z, 0) + log1p(exp(-|z|)): no overflow for large |z|."""
    return ops.relu(z) + ops.log1p(ops.exp(ops.neg(ops.abs(z))))


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    x = as_tensor(input)
    z = x * beta
    smooth = _stable_softplus(z) if beta == 1 else _stable_softplus(z) / beta
    return ops.where(ops.gt(z, threshold), x, smooth)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), computed stably."""
    return ops.neg(_stable_softplus(ops.neg(as_tensor(input))))


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _applied(input, "mish", lambda t: t * ops.tanh(softplus(t)), inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """x clamped to [min_val, max_val]."""
    if min_val > max_val:
        raise ArgumentError(f"hardtanh: min_val={min_val} must not exceed max_val={max_val}")
    return _applied(input, "hardtanh", lambda t: ops.clip(t, min_val, max_val), inplace)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """`hardtanh` in place."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6: 0 below -3, 1 above 3, linear between."""
    return _applied(input, "hardsigmoid", lambda t: ops.clip(t / 6.0 + 0.5, 0.0, 1.0), inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    return _applied(input, "hardswish", lambda t: t * ops.clip(t / 6.0 + 0.5, 0.0, 1.0),
                    inplace)


def _exp_minus_one(t: Tensor, alpha: float) -> Tensor:
    """alpha * (exp(min(t, 0) / alpha) - 1): exp never sees a large positive value."""
    return ops.expm1(ops.minimum(t, 0.0) / alpha) * alpha


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * (x where x > 0, else alpha * (exp(x) - 1)), PyTorch's self-normalizing
    constants."""
    def compute(t):
        return ops.where(ops.gt(t, 0.0), t, _exp_minus_one(t, 1.0) * SELU_ALPHA) * SELU_SCALE

    return _applied(input, "selu", compute, inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha * (exp(x / alpha) - 1)."""
    if alpha == 0:
        raise ArgumentError("celu: alpha must not be 0")
    return _applied(input, "celu",
                    lambda t: ops.where(ops.gt(t, 0.0), t, _exp_minus_one(t, alpha)), inplace)


def selu_(input: Tensor) -> Tensor:
    """`selu` in place."""
    return selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """`celu` in place."""
    return celu(input, alpha, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """`elu` in place: x where x > 0, else alpha * (exp(x) - 1)."""
    return _applied(input, "elu",
                    lambda t: ops.where(ops.gt(t, 0.0), t,
                                        ops.expm1(ops.minimum(t, 0.0)) * alpha), True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """`leaky_relu` in place."""
    return _applied(input, "leaky_relu",
                    lambda t: ops.where(ops.gt(t, 0.0), t, t * negative_slope), True)


def relu_(input: Tensor) -> Tensor:
    """`relu` in place."""
    return _applied(input, "relu", ops.relu, True)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit: a * sigmoid(b), with a and b the two halves of `dim`."""
    x = as_tensor(input)
    if x.ndim == 0:
        raise ShapeError("glu: expects at least one dim, got a 0-d tensor")
    size = x.shape[dim]
    if size is not None and size % 2:
        raise ShapeError(f"glu: dim {dim} of shape {x.shape} must have an even size")
    a, b = ops.chunk(x, 2, dim)
    return a * ops.sigmoid(b)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0."""
    x = as_tensor(input)
    return ops.where(ops.gt(ops.abs(x), lambd), x, ops.zeros_like(x))


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    if lambd < 0:
        raise ArgumentError(f"softshrink: lambd must be >= 0, got {lambd}")
    x = as_tensor(input)
    shrunk = ops.where(ops.gt(x, lambd), x - lambd, x + lambd)
    return ops.where(ops.gt(ops.abs(x), lambd), shrunk, ops.zeros_like(x))


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    x = as_tensor(input)
    return x / (ops.abs(x) + 1.0)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    x = as_tensor(input)
    return x - ops.tanh(x)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else `value`."""
    return _applied(input, "threshold",
                    lambda t: ops.where(ops.gt(t, threshold), t, ops.full_like(t, value)),
                    inplace)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """`threshold` in place."""
    return globals()["threshold"](input, threshold, value, True)


def implicit_dim(name: str, ndim: int) -> int:
    """The dim PyTorch's softmax family picks when none is given (with its warning)."""
    warnings.warn(f"{name}: implicit dimension choice is deprecated; pass dim", UserWarning,
                  stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: DTypeLike | None = None) -> Tensor:
    """softmax(-x) along `dim` (computed in `dtype` when given)."""
    x = as_tensor(input)
    if dtype is not None:
        x = ops.cast(x, dtype)
    if dim is None:
        dim = implicit_dim("softmin", x.ndim)
    return ops.softmax(ops.neg(x), dim)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else weight * x; `weight` has one slope, or one per channel (dim 1)."""
    x, w = as_tensor(input), as_tensor(weight)
    if w.ndim > 1:
        raise ShapeError(f"prelu: weight must be 0-d or 1-d, got shape {w.shape}")
    count = 1 if w.ndim == 0 else w.shape[0]
    channels = x.shape[1] if x.ndim >= 2 else 1
    if count != 1 and count != channels:
        raise ShapeError(f"prelu: {count} slopes do not fit an input of shape {x.shape} "
                         f"({channels} channels in dim 1)")
    if w.ndim == 1 and x.ndim >= 2:
        w = ops.reshape(w, (count,) + (1,) * (x.ndim - 2))
    elif w.ndim == 1:
        w = ops.reshape(w, ()) if x.ndim == 0 else w
    return ops.where(ops.gt(x, 0.0), x, x * w)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: in training the negative slope of each element is drawn from
    U(lower, upper) (dongjing's seeded generator); in evaluation it is (lower + upper) / 2."""
    if not 0 <= lower <= upper:
        raise ArgumentError(f"rrelu: need 0 <= lower <= upper, got {lower} and {upper}")

    def compute(t):
        if training:
            slope = ops.uniform_like(t, lower, upper)
        else:
            slope = (lower + upper) / 2
        return ops.where(ops.ge(t, 0.0), t, t * slope)

    return _applied(input, "rrelu", compute, inplace)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    """`rrelu` in place."""
    return rrelu(input, lower, upper, training, True)
