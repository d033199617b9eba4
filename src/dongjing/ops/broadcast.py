"""The one helper that reduces a broadcast gradient back to an input's shape."""

from __future__ import annotations


def sum_to_shape(g, shape: tuple):
    """Sum `g` over the dims that broadcasting added or stretched, so it has `shape`.

    Every vjp of a broadcasting op calls this; it is a no-op (returns `g`) when shapes agree.
    An unknown (`None`) input dim is taken as not broadcast.
    """
    gshape = g.shape
    if gshape == shape:
        return g
    reduce_sum = _reduce_sum()

    lead = len(gshape) - len(shape)
    stretched = tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and gshape[lead + i] != 1
    )
    if stretched:
        g = reduce_sum(g, dim=stretched, keepdim=True)
    if lead:
        g = reduce_sum(g, dim=tuple(range(lead)), keepdim=False)
    return g


def _reduce_sum():
    global _reduce_sum
    from .reduce import sum as reduce_sum  # deferred: reduce imports this module

    _reduce_sum = lambda: reduce_sum  # noqa: E731  (resolved once)
    return reduce_sum
