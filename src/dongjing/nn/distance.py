"""Distances and similarities: `cosine_similarity`, `pairwise_distance`, `cdist` (also
`dj.cdist`) and the `CosineSimilarity` / `PairwiseDistance` layers, composed of dongjing ops."""

from __future__ import annotations

from .. import ops
from ..autocasting import autocast_policy
from ..errors import ShapeError
from ..linalg import vector_norm
from ..ops.convert import as_tensor
from ..tensor import Tensor
from .module import Module


def _norm(x: Tensor, p: float, dim: int, keepdim: bool = False) -> Tensor:
    """The p-norm along `dim`, its gradient 0 (not NaN) at 0, as PyTorch's norms."""
    return vector_norm(x, p, dim, keepdim)


@autocast_policy("cosine_similarity")
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 * x2) / (max(|x1|, eps) * max(|x2|, eps)) along `dim` (inputs broadcast)."""
    x1, x2 = as_tensor(x1), as_tensor(x2)
    n1 = ops.clamp_min(_norm(x1, 2, dim, keepdim=True), eps)
    n2 = ops.clamp_min(_norm(x2, 2, dim, keepdim=True), eps)
    return ops.sum((x1 / n1) * (x2 / n2), dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """The p-norm of `x1 - x2 + eps` along the last dim (inputs broadcast)."""
    x1, x2 = as_tensor(x1), as_tensor(x2)
    return _norm(x1 - x2 + eps, p, -1, keepdim)


@autocast_policy("cdist")
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """Distances between every row of `x1` (*, P, M) and every row of `x2` (*, R, M): a tensor
    of shape (*, P, R). The difference of each pair is formed directly (no |a|^2 - 2ab + |b|^2
    shortcut), so close points keep their digits."""
    x1, x2 = as_tensor(x1), as_tensor(x2)
    if x1.ndim < 2 or x2.ndim < 2 or (None not in (x1.shape[-1], x2.shape[-1])
                                      and x1.shape[-1] != x2.shape[-1]):
        raise ShapeError(f"cdist: expects (*, P, M) and (*, R, M) inputs, got {x1.shape} and "
                         f"{x2.shape}")
    if p < 0:
        raise ValueError(f"cdist: p must be non-negative, got {p}")
    diff = ops.unsqueeze(x1, -2) - ops.unsqueeze(x2, -3)  # (*, P, R, M)
    return _norm(diff, p, -1)


class CosineSimilarity(Module):
    """`cosine_similarity` as a layer."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """`pairwise_distance` as a layer."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
