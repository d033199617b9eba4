"""The operand layouts `backends/cuda_gemm.py` hands cuBLAS, checked without a GPU: a
column-major gemm written out in NumPy over the operands' raw memory, given the ops and
leading dimensions the module computes, must give ``a @ b`` for contiguous operands,
transposed views, row slices, single rows and columns."""

from __future__ import annotations

import numpy as np
import pytest

from dongjing.backends.cuda_gemm import gemm_call, operand


def _column_major(buf, offset, ld, op, rows, cols):
    """The (rows x cols) matrix op(X) that cuBLAS reads from `buf` at `offset` with `ld`."""
    stored_rows, stored_cols = (rows, cols) if op == 0 else (cols, rows)
    x = np.empty((stored_rows, stored_cols), buf.dtype)
    for j in range(stored_cols):
        x[:, j] = buf[offset + j * ld: offset + j * ld + stored_rows]
    return x if op == 0 else x.T


def _raw(view):
    """(the whole buffer, the element offset of `view` in it)."""
    base = view.base if view.base is not None else view
    while base.base is not None:
        base = base.base
    flat = base.reshape(-1)
    offset = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0])
    return flat, offset // view.itemsize


def _gemm(a, b):
    a_op, b_op = operand(a.shape, a.strides, a.itemsize), operand(b.shape, b.strides, b.itemsize)
    if a_op is None:
        a = np.ascontiguousarray(a)
        a_op = operand(a.shape, a.strides, a.itemsize)
    if b_op is None:
        b = np.ascontiguousarray(b)
        b_op = operand(b.shape, b.strides, b.itemsize)
    tb, ta, m, n, k, _, ld_b, _, ld_a, ldc = gemm_call(a.shape, b.shape, a_op, b_op,
                                                       max(b.shape[1], 1))
    b_buf, b_off = _raw(b)
    a_buf, a_off = _raw(a)
    first = _column_major(b_buf, b_off, ld_b, tb, m, k)  # (n x k) in row-major names
    second = _column_major(a_buf, a_off, ld_a, ta, k, n)
    out_t = first @ second  # column-major (n x m) = out^T
    assert ldc >= max(1, m)
    return out_t.T


rng = np.random.default_rng(0)
M = rng.standard_normal((7, 5))
N = rng.standard_normal((5, 6))
CASES = {
    "contiguous": (M, N),
    "a transposed view": (np.ascontiguousarray(M.T).T, N),
    "b transposed view": (M, np.ascontiguousarray(N.T).T),
    "both transposed": (np.ascontiguousarray(M.T).T, np.ascontiguousarray(N.T).T),
    "row slices (ld > cols)": (rng.standard_normal((7, 9))[:, 2:7],
                               rng.standard_normal((5, 8))[:, :6]),
    "every other row": (rng.standard_normal((14, 5))[::2], N),
    "a single row": (M[3:4], N),
    "a single column": (M, N[:, 2:3]),
    "a broadcast (copied)": (np.broadcast_to(M[:1], (7, 5)), N),
    # size-1 dims with stride 0 (broadcast views, as a 1-d @ 1-d gradient makes on the GPU)
    "1x1 with zero strides": (np.lib.stride_tricks.as_strided(M[2:3, 1:2], (1, 1), (0, 0)),
                              np.broadcast_to(N[:1, :4], (1, 4))),
    "a zero-stride column": (M, np.lib.stride_tricks.as_strided(N[:, 1:2], (5, 1), (48, 0))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_layout_cublas_is_given_computes_a_at_b(name):
    a, b = CASES[name]
    np.testing.assert_allclose(_gemm(a, b), a @ b, rtol=1e-12, atol=1e-12)


def test_size_one_dims_never_ask_for_a_copy():
    assert operand((1, 1), (0, 0), 8) == (0, 1)
    assert operand((1, 4), (0, 8), 8) == (0, 4)
    assert operand((4, 1), (8, 0), 8) == (0, 1)


def test_strides_that_no_op_reads_ask_for_a_copy():
    x = rng.standard_normal((6, 6))[::2, ::2]
    assert operand(x.shape, x.strides, x.itemsize) is None
    assert operand((3, 3), (24, 8), 8) == (0, 3) and operand((3, 3), (8, 24), 8) == (1, 3)
