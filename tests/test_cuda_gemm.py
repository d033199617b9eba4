"""The operand layouts `backends/cuda_gemm.py` hands cuBLAS, checked without a GPU: a
column-major gemm written out in NumPy over the operands' raw memory, given the ops and
leading dimensions the module computes, must give ``a @ b`` for contiguous operands,
transposed views, row slices, single rows and columns."""

from __future__ import annotations

import numpy as np
import pytest

from dongjing.backends.cuda_gemm import gemm_call, layout, operand


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


def _readable(x, describe):
    """As cuda_gemm does: `x` and its layout, copied to C order where needed."""
    found = describe(x.shape, x.strides, x.itemsize)
    if found is None:
        x = np.ascontiguousarray(x)
        found = describe(x.shape, x.strides, x.itemsize)
    return x, found


def _gemm(a, b):
    (a, a_op), (b, b_op) = _readable(a, operand), _readable(b, operand)
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


def _batched_gemm(a, b):
    """`cuda_gemm`'s strided-batched call for a 2-D/3-D `a @ b`, run over the raw memory."""
    (a, a_lay), (b, b_lay) = _readable(a, layout), _readable(b, layout)
    count = max(a.shape[0] if a.ndim == 3 else 1, b.shape[0] if b.ndim == 3 else 1)
    tb, ta, m, n, k, _, ld_b, _, ld_a, _ = gemm_call(a.shape[-2:], b.shape[-2:], a_lay[:2],
                                                     b_lay[:2], max(b.shape[-1], 1))
    b_buf, b_off = _raw(b)
    a_buf, a_off = _raw(a)
    out = []
    for i in range(count):
        first = _column_major(b_buf, b_off + i * b_lay[2], ld_b, tb, m, k)
        second = _column_major(a_buf, a_off + i * a_lay[2], ld_a, ta, k, n)
        out.append((first @ second).T)
    return np.stack(out)


W = rng.standard_normal((6, 9))
COLS = rng.standard_normal((4, 9, 11))
BATCHED = {
    "2-d @ 3-d (conv2d's forward: the weight read by every product)": (W, COLS),
    "3-d @ 2-d": (COLS.transpose(0, 2, 1), W.T),
    "3-d @ transposed 3-d (conv2d's weight gradient)": (
        rng.standard_normal((4, 6, 11)), COLS.transpose(0, 2, 1)),
    "a batch of one with 3-d": (W[None], COLS),
    "every other batch entry": (rng.standard_normal((8, 6, 9))[::2], COLS),
    "a strided batch (copied)": (W, rng.standard_normal((4, 9, 22))[:, :, ::2]),
}


@pytest.mark.parametrize("name", list(BATCHED))
def test_the_batched_layout_cublas_is_given_computes_a_at_b(name):
    a, b = BATCHED[name]
    np.testing.assert_allclose(_batched_gemm(a, b), np.matmul(a, b), rtol=1e-12, atol=1e-12)


def test_products_a_cuda_graph_may_capture():
    """2-D and 3-D float products go through cuda_gemm (capturable); the rest through CuPy."""
    from types import SimpleNamespace

    from dongjing.compiler.cuda_graphs import _product_reason

    def node(name, *shapes, dtype=np.float32):
        inputs = [SimpleNamespace(shape=s, dtype=np.dtype(dtype)) for s in shapes]
        return SimpleNamespace(op=SimpleNamespace(name=name), inputs=inputs)

    assert _product_reason(node("matmul", (3, 4), (4, 5)), own_gemm=True) is None
    assert _product_reason(node("matmul", (32, 9), (64, 9, 676)), own_gemm=True) is None
    assert _product_reason(node("matmul", (2, 3, 4), (2, 4, 5), dtype=np.float64), True) is None
    for refused in (node("matmul", (4,), (4, 5)), node("matmul", (2, 2, 3, 4), (4, 5)),
                    node("matmul", (3, 4), (4, 5), dtype=np.float16), node("einsum", (3, 4))):
        assert _product_reason(refused, own_gemm=True) is not None
    assert _product_reason(node("matmul", (3, 4), (4, 5)), own_gemm=False) is not None
    assert _product_reason(node("add", (3, 4), (3, 4)), own_gemm=False) is None
