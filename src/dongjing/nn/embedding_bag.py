"""`F.embedding_bag` / `nn.EmbeddingBag`: the sum, mean or max of each bag of embeddings,
without materializing the bags as a padded batch. Bags come from a 2-d input (one per row) or
a 1-d input cut at `offsets`; sums and means are one product with a bag-membership matrix."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import ops
from ..core.validation import check_int
from ..errors import GraphError, ShapeError
from ..ops.convert import as_tensor
from ..tensor import Tensor
from ..tensor.transfer import constant_like
from . import init
from .factory import place_new
from .module import Module
from .parameter import Parameter

if TYPE_CHECKING:
    from ..types import DeviceLike, DTypeLike, TensorLike

_MODES = ("sum", "mean", "max")


def _bags(flat: np.ndarray, offsets, include_last_offset: bool, n: int) -> np.ndarray:
    """The bag index of each of the `n` entries of a 1-d input."""
    if offsets is None:
        raise ValueError("embedding_bag: a 1-d input needs offsets")
    offsets = as_tensor(offsets)
    if offsets._node is not None:
        raise GraphError("embedding_bag: offsets must be known (an eager tensor) to cut the "
                         "bags")
    starts = np.asarray(offsets.numpy(), np.int64).reshape(-1)
    if starts.size == 0 or starts[0] != 0 or (np.diff(starts) < 0).any() or starts[-1] > n:
        raise ValueError(f"embedding_bag: offsets must start at 0 and not decrease up to the "
                         f"input length {n}, got {starts.tolist()}")
    if include_last_offset:
        starts = starts[:-1]
    return np.searchsorted(starts, np.arange(n), side="right") - 1, starts.size


def embedding_bag(input: Tensor, weight: Tensor, offsets=None, max_norm=None,
                  norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                  mode: str = "mean", sparse: bool = False, per_sample_weights=None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> Tensor:
    """(bags, embedding_dim): each bag's rows of `weight` reduced by `mode` ("sum", "mean",
    "max"); entries equal to `padding_idx` are left out; an empty bag gives zeros."""
    if mode not in _MODES:
        raise ValueError(f"embedding_bag: mode must be one of {_MODES}, got {mode!r}")
    if max_norm is not None or scale_grad_by_freq:
        raise NotImplementedError("embedding_bag: max_norm and scale_grad_by_freq are not "
                                  "supported")
    if per_sample_weights is not None and mode != "sum":
        raise ValueError("embedding_bag: per_sample_weights are only supported with mode='sum'")
    idx = as_tensor(input)
    if idx.dtype.kind not in "iu" or idx.ndim not in (1, 2):
        raise ShapeError(f"embedding_bag: input must be a 1-d or 2-d integer tensor, got "
                         f"{idx.dtype} of shape {idx.shape}")
    if idx._node is not None:
        raise GraphError("embedding_bag: the input must be known (an eager tensor)")
    ids = np.asarray(idx.numpy(), np.int64)
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: offsets must be None for a 2-d input")
        bag_of = np.repeat(np.arange(ids.shape[0]), ids.shape[1])
        bags = ids.shape[0]
    else:
        bag_of, bags = _bags(ids, offsets, include_last_offset, ids.size)
    flat = ids.reshape(-1)
    rows = weight[as_tensor(flat)]  # (K, D)
    if per_sample_weights is not None:
        rows = rows * ops.reshape(as_tensor(per_sample_weights), (-1, 1))
    keep = np.ones(flat.size, bool) if padding_idx is None else flat != padding_idx % len(weight)
    member = np.zeros((bags, flat.size), rows.dtype)
    member[bag_of[keep], np.nonzero(keep)[0]] = 1.0
    if mode != "max":
        out = ops.matmul(constant_like(member, rows), rows)
        if mode == "mean":
            counts = np.maximum(member.sum(1, keepdims=True), 1.0).astype(rows.dtype)
            out = out / constant_like(counts, rows)
        return out
    pieces = []
    for b in range(bags):
        chosen = np.nonzero(member[b])[0]
        pieces.append(ops.amax(rows[chosen], 0) if chosen.size else
                      ops.zeros_like(rows[0]))
    return ops.stack(pieces, 0)


class EmbeddingBag(Module):
    """A lookup table whose rows are summed, averaged or max-pooled per bag."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: TensorLike | None = None,
                 include_last_offset: bool = False,
                 padding_idx: int | None = None, device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        super().__init__()
        self.num_embeddings = check_int("nn.EmbeddingBag", "num_embeddings", num_embeddings, 1)
        self.embedding_dim = check_int("nn.EmbeddingBag", "embedding_dim", embedding_dim, 1)
        if mode not in _MODES:
            raise ValueError(f"nn.EmbeddingBag: mode must be one of {_MODES}, got {mode!r}")
        self.mode, self.include_last_offset, self.padding_idx = mode, include_last_offset, \
            padding_idx
        self.max_norm, self.scale_grad_by_freq = max_norm, scale_grad_by_freq
        if _weight is None:
            self.weight = Parameter(np.empty((num_embeddings, embedding_dim), np.float32))
            init.normal_(self.weight)
            if padding_idx is not None:
                self.weight._data[padding_idx] = 0.0
        else:
            self.weight = Parameter(_weight)
        place_new(self, device, dtype)

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        return embedding_bag(input, self.weight, offsets, self.max_norm, 2.0,
                             self.scale_grad_by_freq, self.mode, False, per_sample_weights,
                             self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"
