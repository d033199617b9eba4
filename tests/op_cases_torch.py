"""Op-table cases for the primitives of ops/torch_elementwise.py (PyTorch coverage, issue 33):
the inverse hyperbolic functions (gradchecked in float64) and the integer and bit functions
(forward and graph checks only: they have no gradient)."""

from __future__ import annotations

import numpy as np
from op_cases import Case, _ints, _r

import dongjing as dj

TORCH_CASES = {
    "acosh": [Case(dj.acosh, (_r(3, 4) + 2.5,))],
    "asinh": [Case(dj.asinh, (_r(3, 4) * 3,))],
    "atanh": [Case(dj.atanh, (_r(3, 4) * 0.9,))],
    "gcd": [Case(dj.gcd, (_ints(3, 4, high=20), _ints(4, high=12, seed=1)), "broadcast")],
    "lcm": [Case(dj.lcm, (_ints(3, 4, high=9) + 1, _ints(3, 4, high=7, seed=1)))],
    "bitwise_and": [Case(dj.bitwise_and, (_ints(3, 4, high=16), _ints(4, high=16, seed=1)))],
    "bitwise_or": [Case(dj.bitwise_or, (_ints(3, 4, high=16), _ints(3, 4, high=16, seed=1)))],
    "bitwise_xor": [Case(dj.bitwise_xor, (_ints(3, 4, high=16), _ints(3, 4, high=16, seed=2))),
                    Case(dj.bitwise_xor, (_ints(5, high=2).astype(bool),
                                          _ints(5, high=2, seed=1).astype(bool)), "bools")],
    "bitwise_not": [Case(dj.bitwise_not, (_ints(3, 4, high=16) - 8,))],
    "bitwise_left_shift": [Case(dj.bitwise_left_shift, (_ints(3, 4, high=16),
                                                        _ints(3, 4, high=4, seed=1)))],
    "bitwise_right_shift": [Case(dj.bitwise_right_shift, (_ints(3, 4, high=64) - 32,
                                                          _ints(3, 4, high=4, seed=1)))],
    "signbit": [Case(lambda x: dj.signbit(x), (np.array([-1.0, -0.0, 0.0, 2.0]),), grad=False)],
    "nextafter": [Case(dj.nextafter, (_r(3, 4), _r(3, 4, seed=1)), grad=False)],
}
