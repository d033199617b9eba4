"""Linear, Flatten, Identity and Embedding layers."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import ops
from ..core.validation import check_int
from ..errors import ArgumentError, ShapeError
from ..tensor import Tensor
from ..tensor.transfer import constant_like
from . import functional as F
from . import init
from .factory import place_new
from .module import Module
from .parameter import Parameter

if TYPE_CHECKING:
    from ..types import DeviceLike, DTypeLike


class Identity(Module):
    """Returns its input (any constructor arguments are ignored, as PyTorch's are)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return x


class Linear(Module):
    """y = x @ weight.T + bias; weight (out_features, in_features), PyTorch's initialization."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        super().__init__()
        self.in_features = check_int("nn.Linear", "in_features", in_features, minimum=0)
        self.out_features = check_int("nn.Linear", "out_features", out_features, minimum=0)
        dtype = dtype or np.float32
        self.weight = Parameter(np.empty((out_features, in_features), dtype))
        if bias:
            self.bias = Parameter(np.empty((out_features,), dtype))
        else:
            self.register_parameter("bias", None)
        init.default_(self.weight, self.bias)
        place_new(self, device)

    def forward(self, x: Tensor) -> Tensor:
        shape = getattr(x, "shape", None)
        if shape is not None and (not shape or shape[-1] not in (None, self.in_features)):
            raise ShapeError(f"nn.Linear({self.in_features}, {self.out_features}): input of "
                             f"shape {tuple(shape)} must end in a dim of {self.in_features}")
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Flatten(Module):
    """Merge dims `start_dim..end_dim` (default: all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        return ops.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Embedding(Module):
    """A lookup table: row `i` of `weight` (num_embeddings, embedding_dim) for index `i`."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 _freeze: bool = False, device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        if scale_grad_by_freq or sparse:
            raise NotImplementedError("nn.Embedding: scale_grad_by_freq=True and sparse=True "
                                      "are not supported")
        super().__init__()
        self.num_embeddings = check_int("nn.Embedding", "num_embeddings", num_embeddings, 0)
        self.embedding_dim = check_int("nn.Embedding", "embedding_dim", embedding_dim, 0)
        if padding_idx is not None:
            padding_idx = check_int("nn.Embedding", "padding_idx", padding_idx)
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ArgumentError(f"nn.Embedding: argument 'padding_idx' ({padding_idx}) is "
                                    f"out of range for {num_embeddings} embeddings")
        self.padding_idx = padding_idx
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(np.empty((num_embeddings, embedding_dim), np.float32),
                                    requires_grad=not _freeze)
            init.normal_(self.weight)
            if padding_idx is not None:
                self.weight._data[padding_idx] = 0.0
        else:  # PyTorch's way in for a given table (Embedding.from_pretrained)
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ShapeError(f"nn.Embedding: _weight of shape {tuple(_weight.shape)} must "
                                 f"have shape {(num_embeddings, embedding_dim)}")
            self.weight = Parameter(_weight, requires_grad=not _freeze)
        place_new(self, device, dtype)

    def forward(self, indices: Tensor) -> Tensor:
        weight = self.weight
        if self.padding_idx is not None:  # that row is read but never trained
            keep = np.ones((self.num_embeddings, 1), bool)
            keep[self.padding_idx] = False
            weight = ops.where(constant_like(keep, weight), weight, ops.stop_gradient(weight))
        if self.max_norm is not None:  # renormalizes the rows in self.weight, as PyTorch
            F.embedding(indices, self.weight, max_norm=self.max_norm, norm_type=self.norm_type)
        return F.embedding(indices, weight)

    def extra_repr(self) -> str:
        extra = f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return f"{self.num_embeddings}, {self.embedding_dim}{extra}"
