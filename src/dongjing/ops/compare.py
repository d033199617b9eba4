"""Comparisons and logic: elementwise ops with bool results and no gradient."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .. import infer as inf
from ..dispatch import apply1, apply2
from ..registry import register
from .convert import as_tensor, pair

E = "elementwise"


def _cmp(name, fn):
    op = register(name, forward=fn, infer=inf.comparison(name), kind=E, ufunc=fn)

    def compare(a, b):
        a, b = pair(a, b)
        return apply2(op, a, b)

    compare.__name__ = name
    compare.__doc__ = f"Elementwise comparison `{name}` (a bool tensor; no gradient)."
    return compare


eq = _cmp("eq", np.equal)
ne = _cmp("ne", np.not_equal)
lt = _cmp("lt", np.less)
le = _cmp("le", np.less_equal)
gt = _cmp("gt", np.greater)
ge = _cmp("ge", np.greater_equal)


def _logic_infer(name):
    def infer(*specs):
        return inf.broadcast(name, *(s.shape for s in specs)), dtypes.bool_

    return infer


_logical_and = register("logical_and", forward=np.logical_and, infer=_logic_infer("logical_and"),
                        kind=E, ufunc=np.logical_and)
_logical_or = register("logical_or", forward=np.logical_or, infer=_logic_infer("logical_or"),
                       kind=E, ufunc=np.logical_or)
_logical_not = register("logical_not", forward=np.logical_not,
                        infer=_logic_infer("logical_not"), kind=E, ufunc=np.logical_not)


def logical_and(a, b):
    return apply2(_logical_and, *pair(a, b))


def logical_or(a, b):
    return apply2(_logical_or, *pair(a, b))


def logical_not(x):
    return apply1(_logical_not, as_tensor(x))


