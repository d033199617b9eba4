"""Datasets: the indexable protocol and TensorDataset (equal-length tensors, indexed together)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ShapeError
from ..tensor import Tensor

if TYPE_CHECKING:
    from ..types import TensorLike


class Dataset:
    """Anything with `__len__` and `__getitem__(i)` returning one example (a tuple of fields)."""

    def __len__(self) -> int:
        raise NotImplementedError

    def __getitem__(self, index: Any) -> Any:
        raise NotImplementedError


class IterableDataset(Dataset):
    """A stream of examples: subclasses define `__iter__` (and may define `__len__`).

    With DataLoader workers, each worker iterates its own copy: use `get_worker_info()` inside
    `__iter__` to give each worker a different share, or every worker yields the whole stream.
    """

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError

    def __getitem__(self, index: Any) -> Any:
        raise TypeError(f"{type(self).__name__} is an IterableDataset: it is iterated, not "
                        f"indexed")


class TensorDataset(Dataset):
    """Examples are the rows of equally long tensors (or arrays): `ds[i] == (x[i], y[i])`."""

    def __init__(self, *tensors: TensorLike) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        self.tensors = tuple(t if isinstance(t, Tensor) else Tensor(t) for t in tensors)
        sizes = {len(t) for t in self.tensors}
        if len(sizes) != 1:
            shapes = ", ".join(str(t.shape) for t in self.tensors)
            raise ShapeError(f"TensorDataset: tensors differ in length (dim 0): {shapes}")

    def __len__(self) -> int:
        return len(self.tensors[0])

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        return tuple(Tensor._make(t._data[index]) for t in self.tensors)

    def batch(self, indices: np.ndarray) -> tuple[Tensor, ...]:
        """The examples at `indices`, stacked (a fast path for DataLoader)."""
        return tuple(Tensor._make(t._data[indices]) for t in self.tensors)
