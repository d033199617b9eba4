"""tf.clip_by_global_norm, tf.clip_by_norm and tf.global_norm, as TF 1.x computes them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import ops as _ops
from .graphs import tf_function

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...tensor import Tensor
    from ...types import Dim


@tf_function
def global_norm(t_list: Sequence[Tensor | None], name: str | None = None) -> Tensor:
    """sqrt of the sum of squares of every element of every tensor (None entries skipped)."""
    present = [t for t in t_list if t is not None]
    if not present:
        raise ValueError("global_norm: no tensors")
    return _ops.sqrt(sum(_ops.sum(_ops.square(t)) for t in present))


@tf_function
def clip_by_global_norm(t_list: Sequence[Tensor | None], clip_norm: float | Tensor,
                        use_norm: Tensor | None = None, name: str | None = None
                        ) -> tuple[list[Tensor | None], Tensor]:
    """(each tensor * clip_norm / max(global_norm, clip_norm), global_norm): the tensors scaled
    together so that their global norm is at most `clip_norm`."""
    t_list = list(t_list)
    norm = global_norm(t_list) if use_norm is None else use_norm
    scale = clip_norm * _ops.minimum(1.0 / norm, 1.0 / clip_norm + _ops.zeros_like(norm))
    return [None if t is None else t * _ops.cast(scale, t.dtype) for t in t_list], norm


@tf_function
def clip_by_norm(t: Tensor, clip_norm: float | Tensor, axes: Dim = None,
                 name: str | None = None) -> Tensor:
    """t * clip_norm / max(l2 norm of t (over `axes`), clip_norm)."""
    l2sum = _ops.sum(t * t, dim=axes, keepdim=True) if axes is not None else _ops.sum(t * t)
    positive = l2sum > 0.0
    l2norm = _ops.where(positive, _ops.sqrt(_ops.where(positive, l2sum, _ops.ones_like(l2sum))),
                        l2sum)
    return t * clip_norm / _ops.maximum(l2norm, clip_norm + _ops.zeros_like(l2norm))
