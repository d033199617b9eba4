"""Parameter initialization from dongjing's seeded generator (PyTorch's default schemes)."""

from __future__ import annotations

import math

import numpy as np

from ..random import generator
from ..tensor import Tensor


def _fill(tensor: Tensor, values: np.ndarray) -> Tensor:
    np.copyto(tensor.data, values, casting="unsafe")
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


def kaiming_uniform_(tensor: Tensor, a: float = 0.0) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + a^2))."""
    gain = math.sqrt(2.0 / (1.0 + a * a))
    bound = gain * math.sqrt(3.0 / fan_in(tensor.shape))
    return uniform_(tensor, -bound, bound)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    fan_out = tensor.shape[0] * int(np.prod(tensor.shape[2:], dtype=np.int64))
    bound = gain * math.sqrt(6.0 / (fan_in(tensor.shape) + fan_out))
    return uniform_(tensor, -bound, bound)


def default_(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's Linear/Conv default: kaiming_uniform(a=sqrt(5)) => U(+-1/sqrt(fan_in)) for the
    weight, and U(+-1/sqrt(fan_in)) for the bias."""
    fan = fan_in(weight.shape)
    if fan == 0 or weight.data.size == 0:  # zero-element layers are legal (as in PyTorch)
        bound = 1.0 / math.sqrt(fan) if fan else 0.0
    else:
        kaiming_uniform_(weight, a=math.sqrt(5))
        bound = 1.0 / math.sqrt(fan)
    if bias is not None:
        uniform_(bias, -bound, bound)
