"""The `Distribution` base (PyTorch's interface): shapes, sampling and the parameters'
broadcasting."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import ops
from ..autograd.grad_mode import no_grad
from ..ops.convert import as_tensor
from ..tensor import Tensor

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..types import TensorLike

LOG_2PI = math.log(2 * math.pi)


def broadcast_all(*values: Tensor | float) -> list[Tensor]:
    """The parameters as tensors of one broadcast shape (numbers take the tensors' dtype)."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    like = tensors[0] if tensors else None
    out = [as_tensor(v, like) if like is not None else as_tensor(float(v)) for v in values]
    shape = np.broadcast_shapes(*[tuple(t.shape) for t in out])
    return [ops.broadcast_to(t, shape) if tuple(t.shape) != shape else t for t in out]


def _shape(sample_shape: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(sample_shape, int):
        return (sample_shape,)
    return tuple(sample_shape)


class Distribution:
    """A probability distribution over tensors of `event_shape`, batched over `batch_shape`.

    Subclasses define `rsample` (reparameterized, differentiable) or `sample`, and `log_prob`,
    `entropy`, `mean`, `variance`."""

    has_rsample = False

    def __init__(self, batch_shape: Sequence[int] = (), event_shape: Sequence[int] = (),
                 validate_args: bool | None = None) -> None:
        self.batch_shape, self.event_shape = tuple(batch_shape), tuple(event_shape)

    def _extended_shape(self, sample_shape: int | Sequence[int] = ()) -> tuple[int, ...]:
        return _shape(sample_shape) + self.batch_shape + self.event_shape

    def sample(self, sample_shape: int | Sequence[int] = ()) -> Tensor:
        """Draws of shape sample_shape + batch_shape + event_shape, without gradient."""
        with no_grad():
            return self.rsample(sample_shape).detach()

    def rsample(self, sample_shape: int | Sequence[int] = ()) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sampler "
                                  "(rsample); use sample()")

    def log_prob(self, value: TensorLike) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        return ops.sqrt(self.variance)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batch_shape={self.batch_shape}, " \
               f"event_shape={self.event_shape})"
