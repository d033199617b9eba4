"""Matrix products on the GPU through cuBLAS itself (ctypes): compiled programs use it so that
they can be captured in a CUDA graph, eager ops because a call costs a few microseconds of the
host's time where CuPy's `matmul` (a generalised ufunc resolved in Python) costs tens.

CuPy refuses every cuBLAS call while a stream captures (its `setStream` raises
NotImplementedError), although cuBLAS supports capture when it is given a workspace of its own
instead of allocating one. This module keeps one cuBLAS handle per process with such a
workspace, and computes 2-D float32/float64 products `a @ b` with `cublas[SD]gemm` on CuPy's
current stream: in plain runs and in captured ones alike, so a replay runs the very same
kernels. Anything else (batched or 1-D operands, other dtypes, empty dims) goes to
`xp.matmul`. Math mode stays cuBLAS's default (no TF32 for float32).

Row-major arrays are column-major transposes, so ``out = a @ b`` is computed as
``out^T = b^T a^T``: each operand is passed as stored (op N) when its rows are contiguous, or
transposed (op T) when its columns are (a transposed view), else as a contiguous copy.
"""

from __future__ import annotations

import ctypes
import threading

WORKSPACE_BYTES = 32 << 20  # cuBLAS's own recommendation for Hopper is 32 MiB
_OP_N, _OP_T = 0, 1
_SONAMES = ("libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so")


def operand(shape, strides, itemsize: int):
    """How cuBLAS reads a 2-D row-major operand as a column-major one: (op, ld), or None when
    its layout needs a copy first. `strides` are in bytes, as NumPy and CuPy give them."""
    rows, cols = shape
    s0, s1 = strides[0] // itemsize, strides[1] // itemsize
    if strides[0] % itemsize or strides[1] % itemsize:
        return None
    # the stride of a dim of size 1 is never used (broadcast views give 0 there): the gemm
    # reads such an operand as if it were contiguous
    if rows == 1:
        s0 = max(cols, 1)
    if cols == 1:
        s1 = 1
    if (s1 == 1 or cols == 1) and (rows == 1 or s0 >= cols) and s0 > 0:
        return _OP_N, max(s0, cols, 1)  # rows contiguous: column-major it is the transpose
    if (s0 == 1 or rows == 1) and (cols == 1 or s1 >= rows) and s1 > 0:
        return _OP_T, max(s1, rows, 1)  # columns contiguous: a transposed view
    return None


def layout(shape, strides, itemsize: int):
    """How cuBLAS reads a 2-D or 3-D row-major operand: (op, ld, batch stride in elements; 0
    for a single matrix or a batch of one, which every product of the batch then reads), or
    None when its layout needs a copy first."""
    found = operand(shape[-2:], strides[-2:], itemsize)
    if found is None:
        return None
    if len(shape) == 2 or shape[0] == 1:
        return found + (0,)
    if strides[0] % itemsize or strides[0] < 0:
        return None
    return found + (strides[0] // itemsize,)


def gemm_call(a_shape, b_shape, a_op, b_op, out_ld: int) -> tuple:
    """The (transa, transb, m, n, k, first operand, lda, second operand, ldb, ldc) of the
    column-major gemm computing row-major ``out = a @ b``; operands named "a"/"b"."""
    m, k = a_shape
    n = b_shape[1]
    (op_b, ld_b), (op_a, ld_a) = b_op, a_op
    return op_b, op_a, n, m, k, "b", ld_b, "a", ld_a, out_ld


class _Cublas:
    """One cuBLAS handle with a workspace of its own (on the device current at creation)."""

    def __init__(self, xp):
        self.lib = _load()
        handle = ctypes.c_void_p()
        _check(self.lib.cublasCreate_v2(ctypes.byref(handle)), "cublasCreate")
        self.handle = handle
        self.workspace = xp.empty(WORKSPACE_BYTES, dtype=xp.uint8)
        _check(self.lib.cublasSetWorkspace_v2(handle, ctypes.c_void_p(self.workspace.data.ptr),
                                              ctypes.c_size_t(WORKSPACE_BYTES)),
               "cublasSetWorkspace")
        args = [ctypes.c_void_p] + [ctypes.c_int] * 5 + [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
        self.gemm = {}
        for dtype, name, scalar in (("f", "cublasSgemm_v2", ctypes.c_float),  # dtype.char
                                    ("d", "cublasDgemm_v2", ctypes.c_double)):
            fn = getattr(self.lib, name)
            fn.argtypes, fn.restype = args, ctypes.c_int
            one, zero = scalar(1.0), scalar(0.0)
            self.gemm[dtype] = (fn, ctypes.addressof(one), ctypes.addressof(zero), one, zero)
        batched = [ctypes.c_void_p] + [ctypes.c_int] * 5 + [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong,
            ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong,
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong, ctypes.c_int]
        self.batched = {}
        for dtype, name in (("f", "cublasSgemmStridedBatched"), ("d", "cublasDgemmStridedBatched")):
            fn = getattr(self.lib, name)
            fn.argtypes, fn.restype = batched, ctypes.c_int
            self.batched[dtype] = fn
        self.set_stream = self.lib.cublasSetStream_v2
        self.set_stream.argtypes, self.set_stream.restype = [ctypes.c_void_p,
                                                             ctypes.c_void_p], ctypes.c_int
        self.stream = None


def _load():
    try:  # where CuPy itself finds the CUDA libraries (pip wheels or a toolkit)
        from cuda.pathfinder import load_nvidia_dynamic_lib

        return ctypes.CDLL(load_nvidia_dynamic_lib("cublas").abs_path)
    except Exception:  # noqa: BLE001 - any failure: try the plain library names
        pass
    for name in _SONAMES:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise OSError("libcublas not found")


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"{what} failed with cuBLAS status {status}")


_state: dict = {}
_lock = threading.Lock()


def for_backend(backend):
    """`matmul(a, b, out=None)` for `backend`'s arrays through cuBLAS, or None when this
    backend is not CuPy or cuBLAS cannot be loaded (then programs use `xp.matmul`)."""
    xp = backend.xp
    if not (hasattr(xp, "cuda") and hasattr(xp, "ElementwiseKernel")):
        return None
    key = id(xp)
    with _lock:
        if key not in _state:
            try:
                _state[key] = _make(xp, _Cublas(xp))
            except Exception:  # noqa: BLE001 - no cuBLAS here: the products stay CuPy's
                _state[key] = None
    return _state[key]


def _make(xp, blas: _Cublas):
    current_stream = xp.cuda.get_current_stream

    def stream_ready() -> None:
        stream = current_stream().ptr
        if stream != blas.stream:
            _check(blas.set_stream(blas.handle, ctypes.c_void_p(stream)), "cublasSetStream")
            blas.stream = stream

    def readable(x, describe):
        """`x` and how cuBLAS reads it (`describe`: `operand` or `layout`), copied to C order
        first where its layout is not readable as it is (None: not even then)."""
        found = describe(x.shape, x.strides, x.dtype.itemsize)
        if found is None:
            x = xp.ascontiguousarray(x)
            found = describe(x.shape, x.strides, x.dtype.itemsize)
        return x, found

    def matmul(a, b, out=None):
        dtype = a.dtype.char  # ("f", "d"): a C attribute (`dtype.name` runs Python code)
        if (b.dtype.char != dtype or dtype not in blas.gemm or 0 in a.shape or 0 in b.shape
                or a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]):
            return xp.matmul(a, b, out=out)
        if a.ndim != 2 or b.ndim != 2:
            return batched(a, b, out, dtype)
        (a, a_op), (b, b_op) = readable(a, operand), readable(b, operand)
        if a_op is None or b_op is None:  # a layout no copy made readable: CuPy's own
            return xp.matmul(a, b, out=out)
        shape = (a.shape[0], b.shape[1])
        target = _target(out, shape, a.dtype)
        tb, ta, m, n, k, _, ld_b, _, ld_a, ldc = gemm_call(
            a.shape, b.shape, a_op, b_op, max(shape[1], 1))
        stream_ready()
        fn, one, zero, _, _ = blas.gemm[dtype]
        _check(fn(blas.handle, tb, ta, m, n, k, one, b.data.ptr, ld_b, a.data.ptr, ld_a, zero,
                  target.data.ptr, ldc), f"cublas gemm ({dtype})")
        return _result(out, target)

    def batched(a, b, out, dtype):
        """A batch of products (2-D or 3-D operands; a 2-D one, or a batch of one, is read by
        every product) by one strided-batched gemm; other batch shapes go to CuPy."""
        if a.ndim > 3 or b.ndim > 3:
            return xp.matmul(a, b, out=out)
        count_a = a.shape[0] if a.ndim == 3 else 1
        count_b = b.shape[0] if b.ndim == 3 else 1
        if count_a != count_b and 1 not in (count_a, count_b):
            return xp.matmul(a, b, out=out)  # CuPy raises its own error
        (a, a_lay), (b, b_lay) = readable(a, layout), readable(b, layout)
        if a_lay is None or b_lay is None:
            return xp.matmul(a, b, out=out)
        rows, cols = a.shape[-2], b.shape[-1]
        shape = (max(count_a, count_b), rows, cols)
        target = _target(out, shape, a.dtype)
        tb, ta, m, n, k, _, ld_b, _, ld_a, ldc = gemm_call(
            a.shape[-2:], b.shape[-2:], a_lay[:2], b_lay[:2], max(cols, 1))
        stream_ready()
        _, one, zero, _, _ = blas.gemm[dtype]
        _check(blas.batched[dtype](blas.handle, tb, ta, m, n, k, one, b.data.ptr, ld_b, b_lay[2],
                                   a.data.ptr, ld_a, a_lay[2], zero, target.data.ptr, ldc,
                                   rows * cols, shape[0]), f"cublas batched gemm ({dtype})")
        return _result(out, target)

    def _target(out, shape, dtype):
        if (out is None or not out.flags.c_contiguous or out.dtype != dtype
                or out.shape != shape):
            return xp.empty(shape, dtype)
        return out

    def _result(out, target):
        if out is not None and target is not out:
            xp.copyto(out, target)
            return out
        return target

    return matmul
