"""Parameter: a trainable Variable that a Module registers by attribute."""

from __future__ import annotations

import numpy as np

from ..graph.variable import Variable
from ..tensor import Tensor


class Parameter(Variable):
    """A tensor a Module learns. A Variable, so a graph captures it by reference and a training
    graph updates it in place.

    >>> p = dj.nn.Parameter(dj.zeros(3)); p.requires_grad
    True
    """

    __slots__ = ()

    def __init__(self, data: object = None, requires_grad: bool = True):
        if data is None:
            data = np.zeros(0, dtype=np.float32)
        super().__init__(data, trainable=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + Tensor.__repr__(self)


def buffer(value: object, dtype: object = None) -> Variable:
    """A module buffer: state that is saved but not trained (a non-trainable Variable)."""
    return Variable(value, trainable=False, dtype=dtype)
