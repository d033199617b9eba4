"""cpu_kernels/parallel.py: a ufunc split over two threads gives the unsplit result."""

from __future__ import annotations

import numpy as np
import pytest

from dongjing.cpu_kernels.parallel import split_ufunc

A = np.arange(6, dtype=np.float32).reshape(2, 3)


@pytest.mark.parametrize("other", [
    np.array([[1.0, 2.0, 3.0]], np.float32),  # broadcast row: halves of the flat output don't align
    np.array([[5.0]], np.float32),  # size-1 array
    2.0,  # Python scalar
    A + 1,  # same shape
    np.arange(3, dtype=np.float32),  # lower rank
], ids=["row", "size-1", "scalar", "same-shape", "lower-rank"])
def test_split_ufunc_matches_the_plain_call(other):
    out = np.empty_like(A)
    split_ufunc(np.add, out, A, other)
    np.testing.assert_array_equal(out, A + other)
