"""MultivariateNormal (through its Cholesky factor) and Independent (batch dims read as event
dims)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import linalg, ops
from ..devices.random import generator
from ..errors import ArgumentError, ShapeError
from ..ops.convert import as_tensor
from ..tensor import Tensor
from .distribution import LOG_2PI, Distribution

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..types import TensorLike


def _diagonal(m: Tensor) -> Tensor:
    """The diagonals of a batch of square matrices (*, n, n) -> (*, n)."""
    n = m.shape[-1]
    eye = Tensor._make(np.eye(n, dtype=m.dtype))
    return ops.sum(m * eye, -1)


class MultivariateNormal(Distribution):
    """N(loc, Sigma) over vectors of length k; Sigma given as `covariance_matrix`,
    `precision_matrix` or its Cholesky factor `scale_tril`."""

    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args: bool | None = None):
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ArgumentError("MultivariateNormal: give exactly one of covariance_matrix, "
                                "precision_matrix and scale_tril")
        self.loc = as_tensor(loc)
        if scale_tril is not None:
            self.scale_tril = as_tensor(scale_tril)
        elif covariance_matrix is not None:
            self.scale_tril = linalg.cholesky(as_tensor(covariance_matrix))
        else:
            self.scale_tril = linalg.cholesky(linalg.inv(as_tensor(precision_matrix)))
        k = self.loc.shape[-1] if self.loc.ndim else None
        if k is None or self.scale_tril.shape[-2:] != (k, k):
            raise ShapeError(f"MultivariateNormal: loc of shape {self.loc.shape} and a scale of "
                             f"shape {self.scale_tril.shape} do not fit")
        batch = np.broadcast_shapes(tuple(self.loc.shape[:-1]),
                                    tuple(self.scale_tril.shape[:-2]))
        super().__init__(batch, (k,))

    @property
    def covariance_matrix(self) -> Tensor:
        return ops.matmul(self.scale_tril, ops.transpose(self.scale_tril, -1, -2))

    def rsample(self, sample_shape: int | Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = Tensor._make(np.asarray(generator().standard_normal(shape), self.loc.dtype))
        return self.loc + ops.squeeze(ops.matmul(self.scale_tril, ops.unsqueeze(eps, -1)), -1)

    def _half_log_det(self) -> Tensor:
        return ops.sum(ops.log(_diagonal(self.scale_tril)), -1)

    def log_prob(self, value: TensorLike) -> Tensor:
        diff = as_tensor(value, self.loc) - self.loc
        shape = np.broadcast_shapes(tuple(diff.shape[:-1]), tuple(self.scale_tril.shape[:-2]))
        tril = ops.broadcast_to(self.scale_tril, shape + self.event_shape * 2)
        diff = ops.broadcast_to(diff, shape + self.event_shape)
        whitened = linalg.solve(tril, diff)  # L^-1 (x - loc)
        mahalanobis = ops.sum(whitened * whitened, -1)
        k = self.event_shape[0]
        return -0.5 * (k * LOG_2PI + mahalanobis) - self._half_log_det()

    def entropy(self) -> Tensor:
        k = self.event_shape[0]
        return 0.5 * k * (1.0 + LOG_2PI) + self._half_log_det()

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return ops.sum(self.scale_tril ** 2, -1)


class Independent(Distribution):
    """`base_distribution` with its last `reinterpreted_batch_ndims` batch dims read as event
    dims: log_prob and entropy sum over them."""

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: bool | None = None):
        n = int(reinterpreted_batch_ndims)
        batch = base_distribution.batch_shape
        if not 0 <= n <= len(batch):
            raise ShapeError(f"Independent: reinterpreted_batch_ndims {n} exceeds the base's "
                             f"batch shape {batch}")
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, n
        self.has_rsample = base_distribution.has_rsample
        super().__init__(batch[:len(batch) - n], batch[len(batch) - n:] +
                         base_distribution.event_shape)

    def _summed(self, t: Tensor) -> Tensor:
        n = self.reinterpreted_batch_ndims
        return ops.sum(t, tuple(range(-n, 0))) if n else t

    def sample(self, sample_shape: int | Sequence[int] = ()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: int | Sequence[int] = ()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: TensorLike) -> Tensor:
        return self._summed(self.base_dist.log_prob(value))

    def entropy(self) -> Tensor:
        return self._summed(self.base_dist.entropy())

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance
