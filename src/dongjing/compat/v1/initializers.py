"""TF1's initializers, as classes (`tf.initializers.glorot_uniform()`, `tf.zeros_initializer`)
and their `*_initializer` spellings: called with a shape (and dtype) they give a graph tensor
(a random one draws again each time the Variable's initializer runs)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import ops as _ops
from ...graph.builder import constant
from .dtypes import as_dtype
from .graphs import building
from .random_ops import random_tensor

if TYPE_CHECKING:
    from ...tensor import Tensor
    from ...types import DTypeLike, Shape, TensorLike

_TRUNCATED_STDDEV = 0.87962566103423978  # stddev of a unit normal cut at two stddevs


class Initializer:
    """Base: `init(shape, dtype=None, partition_info=None)` -> a graph tensor."""

    dtype = None

    def _dtype(self, dtype: DTypeLike | None) -> np.dtype:
        return as_dtype(dtype if dtype is not None else self.dtype or "float32")

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}


class Zeros(Initializer):
    """All zeros."""

    def __init__(self, dtype: DTypeLike = "float32") -> None:
        self.dtype = dtype

    def __call__(self, shape: Shape, dtype: DTypeLike | None = None,
                 partition_info: object = None) -> Tensor:
        dtype = self._dtype(dtype)
        with building():
            return _ops.clone(_const(np.zeros(_shape(shape), dtype)))


class Ones(Initializer):
    """All ones."""

    def __init__(self, dtype: DTypeLike = "float32") -> None:
        self.dtype = dtype

    def __call__(self, shape: Shape, dtype: DTypeLike | None = None,
                 partition_info: object = None) -> Tensor:
        dtype = self._dtype(dtype)
        with building():
            return _ops.clone(_const(np.ones(_shape(shape), dtype)))


class Constant(Initializer):
    """`value` (a number fills the shape; a list or array must have as many elements)."""

    def __init__(self, value: TensorLike = 0, dtype: DTypeLike = "float32",
                 verify_shape: bool = False) -> None:
        self.value, self.dtype, self.verify_shape = value, dtype, verify_shape

    def __call__(self, shape: Shape, dtype: DTypeLike | None = None,
                 partition_info: object = None, verify_shape: bool | None = None) -> Tensor:
        dtype = self._dtype(dtype)
        shape = _shape(shape)
        value = np.asarray(self.value, dtype)
        if value.size == 1:
            array = np.full(shape, value.reshape(()), dtype)
        elif value.size == math.prod(shape):
            array = value.reshape(shape)
        else:
            raise ValueError(f"constant_initializer: {value.size} values do not fill a "
                             f"variable of shape {shape}")
        with building():
            return _ops.clone(_const(array))


class RandomNormal(Initializer):
    """Normal draws with `mean` and `stddev`."""

    def __init__(self, mean: float = 0.0, stddev: float = 1.0, seed: int | None = None,
                 dtype: DTypeLike = "float32") -> None:
        self.mean, self.stddev, self.seed, self.dtype = mean, stddev, seed, dtype

    def __call__(self, shape: Shape, dtype: DTypeLike | None = None,
                 partition_info: object = None) -> Tensor:
        return random_tensor(_shape(shape), self._dtype(dtype), "normal", float(self.mean),
                             float(self.stddev), self.seed)


class TruncatedNormal(Initializer):
    """Normal draws within two standard deviations of `mean`."""

    def __init__(self, mean: float = 0.0, stddev: float = 1.0, seed: int | None = None,
                 dtype: DTypeLike = "float32") -> None:
        self.mean, self.stddev, self.seed, self.dtype = mean, stddev, seed, dtype

    def __call__(self, shape: Shape, dtype: DTypeLike | None = None,
                 partition_info: object = None) -> Tensor:
        return random_tensor(_shape(shape), self._dtype(dtype), "truncated_normal",
                             float(self.mean), float(self.stddev), self.seed)


class RandomUniform(Initializer):
    """Uniform draws in [minval, maxval) (maxval defaults to 1 for floats)."""

    def __init__(self, minval: float = 0, maxval: float | None = None, seed: int | None = None,
                 dtype: DTypeLike = "float32") -> None:
        self.minval, self.maxval, self.seed, self.dtype = minval, maxval, seed, dtype

    def __call__(self, shape: Shape, dtype: DTypeLike | None = None,
                 partition_info: object = None) -> Tensor:
        dtype = self._dtype(dtype)
        maxval = self.maxval
        if maxval is None:
            if dtype.kind != "f":
                raise ValueError("random_uniform_initializer: an integer dtype needs maxval")
            maxval = 1.0
        return random_tensor(_shape(shape), dtype, "uniform", self.minval, maxval, self.seed)


class VarianceScaling(Initializer):
    """Draws scaled to the variable's fan (TF 1.x): stddev sqrt(scale / n) with n the fan in,
    fan out or their mean (`mode`); `distribution` "truncated_normal" (or its old name
    "normal"), "untruncated_normal" or "uniform" (limit sqrt(3 scale / n))."""

    def __init__(self, scale: float = 1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal", seed: int | None = None,
                 dtype: DTypeLike = "float32") -> None:
        if scale <= 0.0:
            raise ValueError("variance_scaling_initializer: scale must be positive")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"variance_scaling_initializer: unknown mode {mode!r}")
        distribution = distribution.lower()
        if distribution not in ("normal", "uniform", "truncated_normal", "untruncated_normal"):
            raise ValueError(f"variance_scaling_initializer: unknown distribution "
                             f"{distribution!r}")
        self.scale, self.mode, self.distribution = scale, mode, distribution
        self.seed, self.dtype = seed, dtype

    def __call__(self, shape: Shape, dtype: DTypeLike | None = None,
                 partition_info: object = None) -> Tensor:
        shape = _shape(shape)
        dtype = self._dtype(dtype)
        fan_in, fan_out = _fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}
        scale = self.scale / max(1.0, n[self.mode])
        if self.distribution in ("normal", "truncated_normal"):
            return random_tensor(shape, dtype, "truncated_normal", 0.0,
                                 math.sqrt(scale) / _TRUNCATED_STDDEV, self.seed)
        if self.distribution == "untruncated_normal":
            return random_tensor(shape, dtype, "normal", 0.0, math.sqrt(scale), self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_tensor(shape, dtype, "uniform", -limit, limit, self.seed)


class GlorotUniform(VarianceScaling):
    """Uniform in +-sqrt(6 / (fan_in + fan_out)) (Xavier)."""

    def __init__(self, seed: int | None = None, dtype: DTypeLike = "float32") -> None:
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)


class GlorotNormal(VarianceScaling):
    """Truncated normal with stddev sqrt(2 / (fan_in + fan_out)) (Xavier)."""

    def __init__(self, seed: int | None = None, dtype: DTypeLike = "float32") -> None:
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)


def _fans(shape) -> tuple[float, float]:
    if len(shape) < 1:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    if len(shape) == 2:
        return float(shape[0]), float(shape[1])
    receptive = math.prod(shape[:-2])
    return float(shape[-2] * receptive), float(shape[-1] * receptive)


def _shape(shape: Shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def _const(array: np.ndarray) -> Tensor:
    return constant(array)


def he_normal(seed: int | None = None) -> VarianceScaling:
    """He: truncated normal, stddev sqrt(2 / fan_in)."""
    return VarianceScaling(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed: int | None = None) -> VarianceScaling:
    """He: uniform in +-sqrt(6 / fan_in)."""
    return VarianceScaling(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed: int | None = None) -> VarianceScaling:
    """LeCun: truncated normal, stddev sqrt(1 / fan_in)."""
    return VarianceScaling(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed: int | None = None) -> VarianceScaling:
    """LeCun: uniform in +-sqrt(3 / fan_in)."""
    return VarianceScaling(1.0, "fan_in", "uniform", seed)


# the tf.*_initializer spellings
zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
random_uniform_initializer = RandomUniform
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal
