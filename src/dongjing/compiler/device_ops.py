"""Device forms of ops whose array-library call cannot be captured in a CUDA graph.

CuPy's `concatenate` of many arrays sends a table of their addresses from the host, which a
stream capture refuses; a compiled GPU program concatenates by copying each part into its
slice of the output instead (one copy kernel per part, recorded like any other).
"""

from __future__ import annotations

from ..core.infer import fmt
from ..errors import ShapeError


def concat_by_copies(xp):
    """`concat(*parts, dim, out=None)` for the array namespace `xp`, by slice copies."""

    def concat(*parts, dim: int, out=None):
        first = parts[0].shape
        axis = dim % len(first)
        for p in parts[1:]:
            if len(p.shape) != len(first) or any(
                    a != b for i, (a, b) in enumerate(zip(p.shape, first)) if i != axis):
                raise ShapeError(f"concat: shapes {', '.join(fmt(x.shape) for x in parts)} "
                                 f"differ outside dim {dim}")
        shape = list(first)
        shape[axis] = sum(p.shape[axis] for p in parts)
        dtype = xp.result_type(*[p.dtype for p in parts])
        if out is None:
            out = xp.empty(tuple(shape), dtype)
        lead = (slice(None),) * axis
        start = 0
        for p in parts:
            stop = start + p.shape[axis]
            xp.copyto(out[lead + (slice(start, stop),)], p, casting="unsafe")
            start = stop
        return out

    return concat
