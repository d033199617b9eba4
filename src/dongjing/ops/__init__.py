"""The op table and the dj.* functions built on it.

Primitives publish themselves: each op's `public` names map to its binding (see
`dongjing.registry`). The compositions below (mean = sum / count, softmax = exp(log_softmax),
...) are functions of primitives and are listed by hand.
"""

from ..registry import OPS, Cost, Kind, Op, Spec, all_ops, bind, binds, define, register
from . import activation, compare, elementwise, index, linalg, nn, reduce, shape
from .activation import logsumexp, softmax
from .bindings import public_functions
from .elementwise import ones_like, zeros_like
from .index import getitem
from .linalg import dot, mm
from .reduce import max, mean, min, var
from .shape import broadcast_to, broadcast_to_like, flatten, reshape_like, stack, transpose

globals().update(public_functions())

COMPOSITES = ["broadcast_to", "broadcast_to_like", "dot", "flatten", "getitem", "logsumexp",
              "max", "mean", "min", "mm", "reshape_like", "softmax", "stack", "transpose",
              "var"]  # (zeros_like & co. are dj.* from dongjing.creation: they take device=)
EXTENSION_API = ["Cost", "Kind", "Op", "Spec", "all_ops", "bind", "binds", "define", "register"]
__all__ = sorted((set(public_functions()) - {"full_like"}) | set(COMPOSITES) | set(EXTENSION_API)
                 | {"OPS"})
