"""Parameter initialization from dongjing's seeded generator (PyTorch's default schemes)."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..backends import write_into
from ..devices.random import generator
from ..tensor import Tensor


def _fill(tensor: Tensor, values: np.ndarray) -> Tensor:
    write_into(tensor._data, values)  # drawn on the host, moved to the tensor's device
    tensor._version[0] += 1
    return tensor


def fan_in(shape: tuple) -> int:
    """Inputs feeding one output unit: dim 1 times the receptive field (dims 2...)."""
    if len(shape) < 2:
        raise ValueError(f"fan_in needs a tensor of at least 2 dims, got shape {shape}")
    return int(shape[1] * np.prod(shape[2:], dtype=np.int64))


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill in place with U(a, b)."""
    return _fill(tensor, generator().uniform(a, b, tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill in place with N(mean, std^2)."""
    return _fill(tensor, generator().normal(mean, std, tensor.shape))


def zeros_(tensor: Tensor) -> Tensor:
    return _fill(tensor, np.zeros(tensor.shape))


def ones_(tensor: Tensor) -> Tensor:
    return _fill(tensor, np.ones(tensor.shape))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill in place with `val`."""
    return _fill(tensor, np.full(tensor.shape, val))


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-d tensor in place with the identity."""
    if tensor.ndim != 2:
        raise ValueError(f"eye_ needs a 2-d tensor, got shape {tensor.shape}")
    return _fill(tensor, np.eye(*tensor.shape))


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """PyTorch's recommended gain for an activation (linear 1, tanh 5/3, relu sqrt(2), ...)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _fans(shape: tuple) -> tuple[int, int]:
    receptive = int(np.prod(shape[2:], dtype=np.int64))
    return fan_in(shape), int(shape[0]) * receptive


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"kaiming init: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan = _fans(tensor.shape)[0 if mode == "fan_in" else 1]
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu") -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity,
    a)."""
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu") -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan)."""
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in_, fan_out = _fans(tensor.shape)
    bound = gain * math.sqrt(6.0 / (fan_in_ + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in_, fan_out = _fans(tensor.shape)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in_ + fan_out)))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0) -> Tensor:
    """N(mean, std^2) restricted to [a, b] (redrawn until inside)."""
    values = generator().normal(mean, std, tensor.shape)
    outside = (values < a) | (values > b)
    while outside.any():
        values[outside] = generator().normal(mean, std, int(outside.sum()))
        outside = (values < a) | (values > b)
    return _fill(tensor, values)


def orthogonal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """A (semi-)orthogonal matrix (rows x the product of the other dims), scaled by `gain`."""
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_ needs at least 2 dims, got shape {tensor.shape}")
    rows = tensor.shape[0]
    cols = int(np.prod(tensor.shape[1:], dtype=np.int64))
    flat = generator().normal(0.0, 1.0, (rows, cols))
    q, r = np.linalg.qr(flat.T if rows < cols else flat)
    q = q * np.sign(np.diag(r))
    q = q.T if rows < cols else q
    return _fill(tensor, gain * q.reshape(tensor.shape))


def default_(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's Linear/Conv default: kaiming_uniform(a=sqrt(5)) => U(+-1/sqrt(fan_in)) for the
    weight, and U(+-1/sqrt(fan_in)) for the bias."""
    fan = fan_in(weight.shape)
    if fan == 0 or weight._data.size == 0:  # zero-element layers are legal (as in PyTorch)
        bound = 1.0 / math.sqrt(fan) if fan else 0.0
    else:
        kaiming_uniform_(weight, a=math.sqrt(5))
        bound = 1.0 / math.sqrt(fan)
    if bias is not None:
        uniform_(bias, -bound, bound)


def _deprecated(new):
    """PyTorch's old name without the trailing underscore: warns (FutureWarning, as PyTorch
    does) and calls `new`."""
    old = new.__name__[:-1]

    def call(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new.__name__}`.",
                      FutureWarning, stacklevel=2)
        return new(*args, **kwargs)

    call.__name__ = call.__qualname__ = old
    call.__doc__ = f"Deprecated alias of `{new.__name__}` (PyTorch keeps it, with a warning)."
    return call


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
