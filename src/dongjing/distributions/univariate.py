"""Normal, Uniform, Bernoulli and Categorical (PyTorch's parameterizations and formulas)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import ops
from ..devices.random import generator
from ..errors import ArgumentError
from ..ops.convert import as_tensor
from ..ops.sampling import multinomial
from ..tensor import Tensor
from .distribution import LOG_2PI, Distribution, _shape, broadcast_all

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..types import TensorLike


def _noise(like: Tensor, shape: tuple, draw) -> Tensor:
    """A constant tensor of draws, in `like`'s dtype (no gradient: the parameters carry it)."""
    return Tensor._make(np.asarray(draw(shape), like.dtype))


class Normal(Distribution):
    """N(loc, scale^2), elementwise; `rsample` is loc + scale * eps (differentiable)."""

    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float,
                 validate_args: bool | None = None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape)

    def rsample(self, sample_shape: int | Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = _noise(self.loc, shape, lambda s: generator().standard_normal(s))
        return self.loc + self.scale * eps

    def log_prob(self, value: TensorLike) -> Tensor:
        x = as_tensor(value, self.loc)
        return ops.neg((x - self.loc) ** 2 / (2 * self.scale ** 2)) - ops.log(self.scale) \
            - 0.5 * LOG_2PI

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * LOG_2PI + ops.log(self.scale)

    def cdf(self, value: TensorLike) -> Tensor:
        x = as_tensor(value, self.loc)
        return 0.5 * (1 + ops.erf((x - self.loc) / (self.scale * math.sqrt(2))))

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self.scale ** 2


class Uniform(Distribution):
    """U[low, high), elementwise; `rsample` is low + (high - low) * u."""

    has_rsample = True

    def __init__(self, low: Tensor | float, high: Tensor | float,
                 validate_args: bool | None = None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape)

    def rsample(self, sample_shape: int | Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = _noise(self.low, shape, lambda s: generator().random(s))
        return self.low + (self.high - self.low) * u

    def log_prob(self, value: TensorLike) -> Tensor:
        x = as_tensor(value, self.low)
        inside = ops.logical_and(ops.ge(x, self.low), ops.lt(x, self.high))
        density = ops.neg(ops.log(self.high - self.low))
        return ops.where(inside, density, ops.full_like(density, -math.inf))

    def entropy(self) -> Tensor:
        return ops.log(self.high - self.low)

    @property
    def mean(self) -> Tensor:
        return (self.low + self.high) * 0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low) ** 2 / 12.0


def _probs_to_logits(probs: Tensor, binary: bool) -> Tensor:
    """log-odds (binary) or logs of clamped probabilities, as PyTorch computes them."""
    eps = float(np.finfo(probs.dtype).eps)
    p = ops.clamp(probs, eps, 1 - eps)
    return ops.log(p) - ops.log1p(ops.neg(p)) if binary else ops.log(p)


def _softplus(x: Tensor) -> Tensor:
    """log(1 + exp(x)), without overflow."""
    return ops.maximum(x, 0.0) + ops.log1p(ops.exp(ops.neg(ops.abs(x))))


def _one_source(name: str, probs, logits):
    if (probs is None) == (logits is None):
        raise ArgumentError(f"{name}: give exactly one of probs and logits")


class Bernoulli(Distribution):
    """0/1 draws, 1 with probability `probs` (or sigmoid(`logits`))."""

    def __init__(self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
                 validate_args: bool | None = None) -> None:
        _one_source("Bernoulli", probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            self.logits = _probs_to_logits(self.probs, binary=True)
        else:
            (self.logits,) = broadcast_all(logits)
            self.probs = ops.sigmoid(self.logits)
        super().__init__(self.probs.shape)

    def sample(self, sample_shape: int | Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        p = np.broadcast_to(self.probs.detach().numpy(), shape)
        return Tensor._make((generator().random(shape) < p).astype(self.probs.dtype))

    def log_prob(self, value: TensorLike) -> Tensor:
        x = as_tensor(value, self.logits)
        return x * self.logits - _softplus(self.logits)

    def entropy(self) -> Tensor:
        return _softplus(self.logits) - self.probs * self.logits

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)


class Categorical(Distribution):
    """Draws of a category index in [0, K) with probabilities `probs` (normalized along the
    last dim) or softmax(`logits`); batched over the other dims."""

    def __init__(self, probs: TensorLike | None = None, logits: TensorLike | None = None,
                 validate_args: bool | None = None) -> None:
        _one_source("Categorical", probs, logits)
        if probs is not None:
            p = as_tensor(probs)
            self.probs = p / ops.sum(p, -1, keepdim=True)
            self.logits = _probs_to_logits(self.probs, binary=False)
        else:
            raw = as_tensor(logits)
            self.logits = raw - ops.logsumexp(raw, -1, keepdim=True)
            self.probs = ops.softmax(self.logits, -1)
        if self.probs.ndim < 1:
            raise ArgumentError("Categorical: probs/logits need at least one dim (the classes)")
        self.num_categories = self.probs.shape[-1]
        super().__init__(tuple(self.probs.shape[:-1]))

    def sample(self, sample_shape: int | Sequence[int] = ()) -> Tensor:
        shape = _shape(sample_shape)
        n = int(np.prod(shape)) if shape else 1
        rows = ops.reshape(self.probs.detach(), (-1, self.num_categories))
        drawn = multinomial(rows, n, replacement=True).numpy()  # (batch, n)
        drawn = np.moveaxis(drawn, -1, 0).reshape(shape + self.batch_shape)
        return Tensor._make(drawn.astype(np.int64))

    def log_prob(self, value: TensorLike) -> Tensor:
        idx = as_tensor(value)
        shape = np.broadcast_shapes(tuple(idx.shape), self.batch_shape)
        logits = ops.broadcast_to(self.logits, shape + (self.num_categories,))
        picked = ops.gather(logits, -1, ops.unsqueeze(ops.broadcast_to(idx, shape), -1))
        return ops.squeeze(picked, -1)

    def entropy(self) -> Tensor:
        smallest = float(np.finfo(self.logits.dtype).min)
        return ops.neg(ops.sum(self.probs * ops.clamp_min(self.logits, smallest), -1))

    @property
    def mean(self) -> Tensor:
        return ops.full_like(self.probs[..., 0], math.nan)

    @property
    def variance(self) -> Tensor:
        return ops.full_like(self.probs[..., 0], math.nan)


