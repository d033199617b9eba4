"""The op table and the dj.* functions built on it (primitives and compositions)."""

from ..registry import OPS, Op, Spec, all_ops, register
from .activation import log_softmax, logsumexp, softmax
from .compare import eq, ge, gt, le, logical_and, logical_not, logical_or, lt, ne
from .elementwise import (
    abs,
    add,
    cast,
    clamp,
    clip,
    clone,
    div,
    exp,
    full_like,
    log,
    maximum,
    minimum,
    mul,
    neg,
    ones_like,
    pow,
    relu,
    sigmoid,
    sign,
    sqrt,
    stop_gradient,
    sub,
    tanh,
    where,
    zeros_like,
)
from .index import getitem
from .linalg import dot, matmul, mm
from .nn import dropout_mask, erf, fold2d, one_hot, unfold2d
from .reduce import amax, amin, argmax, argmin, count, max, mean, min, sum, var
from .shape import (
    broadcast_to,
    broadcast_to_like,
    cat,
    concat,
    expand,
    flatten,
    permute,
    reshape,
    reshape_like,
    squeeze,
    stack,
    transpose,
    unsqueeze,
)
