"""The types dongjing's public signatures use, for type checkers (as PyTorch's `torch.types`).

Nothing here exists only at run time: each name is an alias a checker reads and a reader can
use in their own annotations (`def step(x: dj.types.TensorLike) -> dj.Tensor`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, Union

import numpy as np

if TYPE_CHECKING:
    from .devices.device import device
    from .graph import Node
    from .tensor import Tensor

Number: TypeAlias = int | float | bool
"""A Python number where a tensor is expected (it takes the other operand's dtype)."""

TensorLike: TypeAlias = Union["Tensor", "Node", np.ndarray, np.generic, int, float, bool,
                              Sequence["TensorLike"]]
"""Anything dj.* functions turn into a tensor: a Tensor, a graph node, a NumPy array or
scalar, a Python number or a (nested) sequence of numbers."""

Dim: TypeAlias = int | Sequence[int] | None
"""A dimension or several (`dim=` / `axis=`); None means all."""

Shape: TypeAlias = int | Sequence[int]
"""A size: one int per dimension (or a single int for one dimension)."""

GraphShape: TypeAlias = Union[int, Sequence[int | None], "Tensor", None]
"""A shape in a static graph (`dj.placeholder`, `compat.v1`): None for a dimension (or the
rank) unknown until run time, or a 1-d int tensor."""

DTypeLike: TypeAlias = np.dtype | type | str
"""`dj.float32`, `np.float32`, `"float32"`, `float`, `int` or `bool`."""

DeviceLike: TypeAlias = Union["device", str, int]
"""`dj.device("cuda:0")`, `"cpu"`, `"cuda:1"` or a GPU index."""

Nested: TypeAlias = TensorLike | Sequence["Nested"] | Mapping[str, "Nested"]
"""A tensor-like, or (nested) tuples, lists and dicts of them (a `tf.data` element)."""

ParamsLike: TypeAlias = Iterable["Tensor"] | Iterable[Mapping[str, Any]]
"""What an optimizer takes: tensors, or parameter groups (`{"params": [...], "lr": 0.1}`)."""

StateDict: TypeAlias = dict[str, Any]
"""A `state_dict()`: names to tensors, numbers, lists and nested dicts (PyTorch's layout; the
values differ by key, so they are `Any`, as in PyTorch's own annotations)."""

__all__ = ["DTypeLike", "DeviceLike", "Dim", "GraphShape", "Nested", "Number", "ParamsLike",
           "Shape", "StateDict", "TensorLike"]
