"""PyTorch's other dropouts (`dropout1d`, `dropout3d`, `alpha_dropout`,
`feature_alpha_dropout`) and `gumbel_softmax`: compositions of the op table's random draws
(`dropout_mask`, `uniform_like`), so graphs draw afresh on every run."""

from __future__ import annotations

from .. import ops
from ..errors import ArgumentError, ShapeError
from ..ops.convert import as_tensor
from ..ops.nn import dropout_mask, uniform_like
from ..tensor import Tensor
from .functional_activation import _applied

__all__ = ["dropout1d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
           "gumbel_softmax"]

# -SELU_ALPHA * SELU_SCALE: the value a SELU network saturates to, which alpha dropout keeps
_ALPHA = 1.7580993408473766


def _check_p(name: str, p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"{name}: p must be in [0, 1], got {p}")


def _channel_dropout(name: str, input, p: float, training: bool, inplace: bool,
                     dims: int) -> Tensor:
    """Zero whole channels of an (N, C, *spatial) or unbatched (C, *spatial) input, `dims`
    spatial dims, scaling the rest by 1 / (1 - p)."""
    _check_p(name, p)
    x = as_tensor(input)
    if x.ndim not in (dims + 1, dims + 2):
        raise ShapeError(f"{name}: expects a {dims + 1}-d (unbatched) or {dims + 2}-d input, "
                         f"got shape {x.shape}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return _applied(x, name, lambda t: t * 0.0, inplace)
    mask = dropout_mask(x[(Ellipsis,) + (slice(0, 1),) * dims], p)
    return _applied(x, name, lambda t: t * mask, inplace)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of an (N, C, L) or (C, L) input with probability `p` (training)."""
    return _channel_dropout("dropout1d", input, p, training, inplace, 1)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of an (N, C, D, H, W) or (C, D, H, W) input with probability `p`."""
    return _channel_dropout("dropout3d", input, p, training, inplace, 3)


def _alpha(name: str, input, p: float, training: bool, inplace: bool, feature: bool):
    _check_p(name, p)
    x = as_tensor(input)
    if feature and x.ndim < 2:
        raise ShapeError(f"{name}: expects an input with a channel dim (N, C, ...), got shape "
                         f"{x.shape}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return _applied(x, name, lambda t: t * 0.0, inplace)
    like = x[(slice(None), slice(None)) + (slice(0, 1),) * (x.ndim - 2)] if feature else x
    keep = dropout_mask(like, p) * (1.0 - p)  # 1 kept, 0 dropped
    a = (((_ALPHA * _ALPHA) * p + 1.0) * (1.0 - p)) ** -0.5
    shift = (keep - 1.0) * (_ALPHA * a) + _ALPHA * a * p
    return _applied(x, name, lambda t: t * (keep * a) + shift, inplace)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped elements take SELU's saturation value and the
    result is rescaled to keep zero mean and unit variance (training only)."""
    return _alpha("alpha_dropout", input, p, training, inplace, False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """`alpha_dropout` of whole channels (one draw per (sample, channel))."""
    return _alpha("feature_alpha_dropout", input, p, training, inplace, True)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """softmax((logits + g) / tau) with g drawn from Gumbel(0, 1); `hard=True` returns the
    one-hot of the argmax with the soft sample's gradient (straight-through)."""
    x = as_tensor(logits)
    exponential = ops.neg(ops.log1p(ops.neg(uniform_like(x))))  # Exp(1) draws
    y = ops.softmax((x - ops.log(exponential)) / tau, dim)
    if not hard:
        return y
    index = ops.argmax(y, dim, keepdim=True)
    one_hot = ops.scatter(ops.zeros_like(y), dim, index, value=1.0)
    return one_hot - y.detach() + y
