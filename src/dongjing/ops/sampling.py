"""`dj.multinomial`: indices drawn from categorical weights, from dongjing's seeded generator."""

from __future__ import annotations

import numpy as np

from ..devices.random import generator as _generator
from ..dtypes import is_floating
from ..errors import ArgumentError, DTypeError, GraphError, ShapeError
from ..tensor import Tensor


def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None,
                out=None) -> Tensor:
    """`num_samples` category indices per row of `input` (1-d or 2-d non-negative weights,
    not necessarily summing to 1), each drawn with probability proportional to its weight;
    without `replacement` no index repeats within a row. An int64 tensor of shape
    (num_samples,) or (rows, num_samples)."""
    if generator is not None or out is not None:
        raise ArgumentError("dj.multinomial: generator= and out= are not supported; seed with "
                            "dj.manual_seed")
    x = input if isinstance(input, Tensor) else Tensor(input)
    if x._node is not None:
        raise GraphError("dj.multinomial: sampling from a symbolic tensor is not supported; "
                         "draw the samples eagerly and feed them")
    if not is_floating(x.dtype):
        raise DTypeError(f"dj.multinomial: weights must be floating point, got {x.dtype}")
    if x.ndim not in (1, 2):
        raise ShapeError(f"dj.multinomial: weights must be 1-d or 2-d, got shape {x.shape}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) \
            or num_samples <= 0:
        raise ArgumentError(f"dj.multinomial: num_samples must be a positive int, got "
                            f"{num_samples!r}")
    weights = np.asarray(x.numpy(), np.float64).reshape(-1, x.shape[-1])
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise ArgumentError("dj.multinomial: weights must be finite and non-negative")
    rows = []
    rng = _generator()
    for row in weights:
        total = row.sum()
        if total <= 0:
            raise ArgumentError("dj.multinomial: each row of weights must have a positive sum")
        if not replacement and num_samples > np.count_nonzero(row):
            raise ArgumentError(f"dj.multinomial: cannot draw {num_samples} samples without "
                                f"replacement from {np.count_nonzero(row)} nonzero weights")
        rows.append(rng.choice(row.size, size=int(num_samples), replace=replacement,
                               p=row / total))
    drawn = np.stack(rows).astype(np.int64)
    return Tensor._make(drawn if x.ndim == 2 else drawn[0])


Tensor.multinomial = multinomial
