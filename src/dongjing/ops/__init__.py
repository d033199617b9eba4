"""The op table and the dj.* functions built on it.

Primitives publish themselves: each op's `public` names map to its binding (see
`dongjing.core.registry`). The compositions below (mean = sum / count, softmax = exp(log_softmax),
...) are functions of primitives and are listed by hand.
"""

import sys

from ..core import late
from ..core.registry import (
    OPS,
    Cost,
    Kernel,
    Kind,
    Onnx,
    Op,
    Spec,
    all_ops,
    bind,
    binds,
    define,
    register,
)
from ..tensor import Tensor
from . import (  # issue 12's surface
    activation,
    bce,
    broadcast,
    compare,
    conv,
    convert,
    einsum,
    elementwise,
    index,
    layout,
    linalg,
    linalg_decompositions,
    math,
    nn,
    nonzero,
    pooling,
    reduce,
    scan,
    scatter,
    shape,
    sorting,
    torch_compat_math,
    torch_compat_shape,
    torch_copies,
    torch_elementwise,
    torch_products,
    torch_reduce_more,
    torch_shape_more,
    torch_statistics,
)
from .activation import logsumexp, softmax
from .bindings import public_functions
from .elementwise import ones_like, zeros_like
from .index import getitem
from .layout import bmm, chunk, narrow, outer, repeat, split, tile, unbind
from .linalg import dot, mm
from .reduce import max, mean, min
from .scan import norm, std, var
from .scatter import index_select, masked_fill
from .shape import broadcast_to, broadcast_to_like, flatten, reshape_like, stack, transpose
from .sorting import sort

globals().update(public_functions())

COMPOSITES = ["broadcast_to", "broadcast_to_like", "dot", "flatten", "getitem", "logsumexp",
              "max", "mean", "min", "mm", "reshape_like", "softmax", "stack", "transpose",
              "var", "bmm", "chunk", "narrow", "outer", "repeat", "split", "tile", "unbind",
              "norm", "std", "index_select", "masked_fill", "sort"]
COMPOSITES += nonzero.__all__
COMPOSITES += [n for n in torch_compat_math.__all__ + torch_compat_shape.__all__
               if n not in public_functions()]  # hypot, logaddexp, fmod are primitives
globals().update({n: getattr(torch_compat_math, n) for n in torch_compat_math.__all__})
globals().update({n: getattr(nonzero, n) for n in nonzero.__all__})
globals().update({n: getattr(torch_compat_shape, n) for n in torch_compat_shape.__all__})
# PyTorch's names added for issue 33's coverage
for _family in (torch_elementwise, torch_shape_more, torch_products, torch_reduce_more,
                torch_statistics, torch_copies):
    COMPOSITES += [n for n in _family.__all__ if n not in public_functions()]
    globals().update({n: getattr(_family, n) for n in _family.__all__})
# (zeros_like & co. are dj.* from dongjing.tensor.creation: they take device=)
EXTENSION_API = ["Cost", "Kernel", "Kind", "Onnx", "Op", "Spec", "all_ops", "bind", "binds",
                 "define", "register"]
__all__ = sorted((set(public_functions()) - {"full_like"}) | set(COMPOSITES) | set(EXTENSION_API)
                 | {"OPS"})


def _attach_composite_methods() -> None:
    """Tensor methods for the compositions above (primitives get theirs from `methods=`)."""

    for name in ("nonzero", "argwhere", "chunk", "narrow", "repeat", "split", "tile", "unbind",
                 "norm", "std", "index_select", "masked_fill", "sort", "bmm", "outer"):
        setattr(Tensor, name, globals()[name])
    Tensor.var = var


_attach_composite_methods()


def _provide_late_slots() -> None:
    """The functions the floors below call up into (see core/late.py)."""
    late.provide(ops=sys.modules[__name__], as_tensor=convert.as_tensor, cast=globals()["cast"],
                 sum_to_shape=broadcast.sum_to_shape, sum_to_like=broadcast.sum_to_like,
                 getitem=index._getitem, slice_assign=index.slice_assign)


_provide_late_slots()
