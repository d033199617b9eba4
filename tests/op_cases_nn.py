"""Cases of the neural-network primitives (ops/nn.py) for the registry-driven op tests;
merged into `op_cases.CASES`."""

from __future__ import annotations

import numpy as np
from op_cases import Case

from dongjing.ops import dropout_mask, erf, fold2d, one_hot, unfold2d, uniform_like
from dongjing.ops.conv import conv2d, conv2d_input_grad, conv2d_weight_grad
from dongjing.ops.pooling import max_pool2d, max_pool2d_backward


def _r(*shape, seed=0):
    return np.random.default_rng(seed + 7).uniform(-1.0, 1.0, shape)


def _apart(*shape, seed=0):
    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n) * 0.1 - n * 0.05).reshape(shape)


def _conv(x, w, b):
    import dongjing.nn.functional as F

    return F.conv2d(x, w, b, stride=1, padding=1)


def _im2col_conv(x, w, b):
    from dongjing import short_paths

    with short_paths.disabled():
        return _conv(x, w, b)


def _max_pool(x):
    import dongjing.nn.functional as F

    return F.max_pool2d(x, 2, padding=1)


NN_CASES: dict[str, list[Case]] = {
    "unfold2d": [Case(lambda x: unfold2d(x, (3, 2), (2, 1), 1), (_r(2, 2, 5, 4),)),
                 Case(_im2col_conv, (_r(2, 2, 4, 4), _r(3, 2, 3, 3, seed=1), _r(3, seed=2)),
                      "conv2d as unfold2d + matmul (short paths off)"),
                 ],
    "conv2d": [Case(_conv, (_r(2, 2, 4, 4), _r(3, 2, 3, 3, seed=1), _r(3, seed=2)), "F.conv2d"),
               Case(lambda x, w: conv2d(x, w, (2, 1), (0, 1)), (_r(3, 2, 5, 4), _r(2, 2, 2, 3)),
                    "strided, padded, odd sizes")],
    "conv2d_input_grad": [Case(lambda g, w: conv2d_input_grad(g, w, (5, 4), (2, 1), (1, 0)),
                               (_r(2, 3, 3, 2), _r(3, 2, 2, 3, seed=1)))],
    "conv2d_weight_grad": [Case(lambda x, g: conv2d_weight_grad(x, g, (2, 3), (2, 1), (1, 0)),
                                (_r(2, 2, 5, 4), _r(2, 3, 3, 2, seed=1)))],
    "max_pool2d": [Case(lambda x: max_pool2d(x, 2), (_apart(2, 3, 4, 6),), "tiling windows"),
                   Case(_max_pool, (_apart(1, 2, 3, 4),), "padded"),
                   Case(lambda x: max_pool2d(x, 3, 1, 1), (_apart(1, 2, 4, 5),),
                        "overlapping windows"),
                   Case(lambda x: max_pool2d(x, 2), (_apart(1, 1, 5, 7),),
                        "a remainder row and column")],
    "max_pool2d_backward": [
        Case(lambda g, x: max_pool2d_backward(g, x, max_pool2d(x, 2), 2, 2, 0),
             (_r(2, 3, 2, 3), _apart(2, 3, 4, 6)), "tiling windows"),
        Case(lambda g, x: max_pool2d_backward(g, x, max_pool2d(x, 3, 1, 1), 3, 1, 1),
             (_r(1, 2, 4, 5), _apart(1, 2, 4, 5)), "overlapping, padded")],
    "fold2d": [Case(lambda c: fold2d(c, (5, 4), (3, 2), (2, 1), 1), (_r(2, 2, 3, 2, 3, 5),))],
    "one_hot": [Case(lambda y: one_hot(y, 4), (np.array([0, 3, 1, 1]),), grad=False),
                Case(lambda y: one_hot(y, 4, ignore_index=-100), (np.array([0, -100, 3, 1]),),
                     "an ignored label: a zero row", grad=False),
                Case(lambda y: one_hot(y, 4, ignore_index=2), (np.array([2, 3, 1, 2]),),
                     "ignoring a class inside the range", grad=False)],
    "dropout_mask": [Case(lambda x: x * dropout_mask(x, 0.3), (_r(4, 5),), grad=False)],
    "uniform_like": [Case(lambda x: x * uniform_like(x, 0.2, 0.5), (_r(4, 5),), grad=False)],
    "erf": [Case(erf, (_r(7) * 2.0,))],
}
