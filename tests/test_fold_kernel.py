"""fold2d's compiled per-plane form (ops/fold_kernel.py) gives NumPy's strided-add sums bit for
bit, for strides, paddings and kernel sizes that overlap, tile or skip, in both float dtypes."""

from __future__ import annotations

import numpy as np
import pytest

from dongjing.compiler import kernels
from dongjing.ops import fold_kernel
from dongjing.ops.nn import fold_strided

pytestmark = pytest.mark.skipif(not kernels.available(), reason="needs numba")


@pytest.mark.parametrize("n,c,h,w,kernel,stride,padding", [
    (4, 3, 9, 9, (3, 3), (1, 1), (0, 0)),  # overlapping windows
    (2, 3, 7, 9, (3, 3), (2, 2), (1, 1)),  # strided and padded
    (3, 2, 8, 8, (2, 2), (2, 2), (0, 0)),  # tiling
    (2, 2, 6, 7, (4, 2), (3, 1), (2, 1)),  # uneven, stride skipping rows
    (1, 1, 5, 5, (3, 3), (1, 1), (1, 1)),
    (40, 40, 30, 30, (3, 3), (1, 1), (1, 1)),  # large enough for two threads
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_per_plane_fold_equals_numpy(n, c, h, w, kernel, stride, padding, dtype):
    oh = (h + 2 * padding[0] - kernel[0]) // stride[0] + 1
    ow = (w + 2 * padding[1] - kernel[1]) // stride[1] + 1
    cols = np.random.default_rng(0).standard_normal((n, c, *kernel, oh, ow)).astype(dtype)
    got = fold_kernel.fold_planes(np, cols, (h, w), kernel, stride, padding)
    assert got is not None and got.flags.c_contiguous
    np.testing.assert_array_equal(got, fold_strided(np, cols, (h, w), kernel, stride, padding))


def test_other_arrays_go_to_numpy():
    cols = np.ones((1, 1, 2, 2, 3, 3), np.float32)
    assert fold_kernel.fold_planes(np, cols[..., ::-1], (4, 4), (2, 2), (1, 1), (0, 0)) is None
    assert fold_kernel.fold_planes(np, cols.astype(np.int64), (4, 4), (2, 2), (1, 1),
                                   (0, 0)) is None
