"""`F.embedding`: rows of a weight picked by integer indices, with PyTorch's `padding_idx` and
`max_norm` (which rescales the looked-up rows of the weight in place)."""

from __future__ import annotations

import numpy as np

from .. import ops
from ..errors import ShapeError
from ..ops.convert import as_tensor
from ..ops.scatter import index_in_range
from ..tensor import Tensor
from ..tensor.transfer import constant_like


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of `weight` picked by integer `input` (a gather; its gradient scatter-adds). The row
    `padding_idx` gets no gradient; with `max_norm`, the rows looked up whose `norm_type`-norm
    exceeds it are rescaled to that norm in `weight` itself first (as PyTorch).
    `scale_grad_by_freq` and `sparse` are refused."""
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: scale_grad_by_freq=True and sparse=True are not "
                                  "supported")
    weight = as_tensor(weight)
    if weight.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-d (num_embeddings, embedding_dim), got "
                         f"shape {weight.shape}")
    indices = index_in_range(as_tensor(input), weight, 0, "embedding")
    if max_norm is not None:
        _renormalize_rows(weight, indices, float(max_norm), float(norm_type))
    if padding_idx is not None:
        rows = weight.shape[0]
        if not -rows <= padding_idx < rows:
            raise ShapeError(f"embedding: padding_idx {padding_idx} is out of range for "
                             f"{rows} rows")
        keep = np.ones((rows, 1), bool)
        keep[padding_idx] = False
        weight = ops.where(constant_like(keep, weight), weight, ops.stop_gradient(weight))
    return weight[indices]


def _renormalize_rows(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float):
    """The rows of `weight` at `indices` scaled in place to a `norm_type`-norm of at most
    `max_norm` (PyTorch's embedding_renorm_: scale max_norm / (norm + 1e-7))."""
    if weight._node is not None or indices._node is not None:
        raise NotImplementedError("embedding: max_norm needs eager tensors (it writes weight)")
    rows = np.unique(np.asarray(indices._data).reshape(-1))
    data = weight._data
    norms = np.linalg.norm(data[rows].reshape(len(rows), -1), ord=norm_type, axis=1)
    over = norms > max_norm
    scale = (max_norm / (norms[over] + 1e-7)).astype(data.dtype)
    data[rows[over]] *= scale[:, None]
    weight._version[0] += 1
