"""How a DataLoader turns a list of examples into one batch (PyTorch's `default_collate`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import ArgumentError
from ..tensor import Tensor


def default_collate(examples: list) -> Any:
    """Stack a list of examples field by field.

    Tensors, NumPy arrays and numbers become one stacked tensor; strings stay a list;
    dicts, named tuples, tuples and lists are collated per field (a tuple of fields stays a
    tuple). Fields must agree in structure and shape across the examples.
    """
    first = examples[0]
    if isinstance(first, Tensor):
        return Tensor(np.stack([e._data for e in examples]))
    if isinstance(first, (str, bytes)):
        return list(examples)
    if isinstance(first, Mapping):
        return {key: default_collate([e[key] for e in examples]) for key in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # a named tuple
        return type(first)(*(default_collate(list(field)) for field in zip(*examples)))
    if isinstance(first, Sequence) and not isinstance(first, np.ndarray):
        if any(len(e) != len(first) for e in examples):
            raise ArgumentError("default_collate: the examples of a batch have fields of "
                                f"different lengths ({sorted({len(e) for e in examples})})")
        fields = [default_collate([e[i] for e in examples]) for i in range(len(first))]
        return tuple(fields) if isinstance(first, tuple) else fields
    arrays = [e._data if isinstance(e, Tensor) else np.asarray(e) for e in examples]
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise ArgumentError(f"default_collate: the examples of a batch differ in shape "
                            f"({', '.join(str(s) for s in sorted(shapes))})")
    return Tensor(np.stack(arrays))


def default_convert(example: Any) -> Any:
    """One example without batching (`batch_size=None`): NumPy arrays become tensors, other
    values stay as they are, containers are converted field by field."""
    if isinstance(example, np.ndarray):
        return Tensor(example)
    if isinstance(example, Mapping):
        return {key: default_convert(value) for key, value in example.items()}
    if isinstance(example, tuple) and hasattr(example, "_fields"):
        return type(example)(*(default_convert(v) for v in example))
    if isinstance(example, (tuple, list)):
        return type(example)(default_convert(v) for v in example)
    return example
