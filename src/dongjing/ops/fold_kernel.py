"""fold2d (col2im) on NumPy arrays as one compiled pass per (image, channel) plane.

NumPy's form adds kh*kw strided slices of the columns into the whole padded output, so the
output (5.5 MB on W7's second convolution) streams through memory kh*kw times. Here each plane
of the output (a few KB) stays in cache while its kh*kw column blocks are added into it, in the
same (i, j) order from zero, so the sums are NumPy's bit for bit; padding is never written.
Two threads take half of the planes each where the parallel setting allows. Used when numba is
there, for C-contiguous float32/float64 columns; `None` sends the caller to NumPy's form.

Its loops index with unsigned integers: numba tests a signed index for a negative value
(Python's wraparound) on every access, which kept the loops from vectorizing (27 ms -> 6 ms on
W7's conv2). unfold2d and the max-pool gradient have compiled forms too (`unfold_kernel`,
`pool_kernel`); max pooling's forward keeps NumPy's `maximum` over strided views, on two halves
of the batch at once where the second thread pays (`cpu_kernels.parallel.numpy_halves_pay`).
"""

from __future__ import annotations

from ..backends import numpy_backend
from ..cpu_kernels import kernels, parallel
from ..short_paths import declare as _declare_short_path
from ..short_paths import state as _short

_declare_short_path("fold_kernel.fold_planes", __name__, "fold2d as one compiled (numba) pass "
                    "per plane instead of NumPy's kh*kw strided adds")

_FOLD = """def _fold_planes(n, kh, kw, oh, ow, sh, sw, ph, pw, h, w, zero, cols, out):
    plane = kh * kw * oh * ow
    hw = h * w
    for b in range(n):
        obase = b * hw
        for k in range(hw):
            out[obase + k] = zero
        cbase = b * plane
        for i in range(kh):
            for j in range(kw):
                lo = 0
                while lo < ow and lo * sw + j - pw < 0:
                    lo += 1
                hi = ow
                while hi > lo and (hi - 1) * sw + j - pw >= w:
                    hi -= 1
                block = cbase + (i * kw + j) * oh * ow
                for oy in range(oh):
                    y = oy * sh + i - ph
                    if y < 0 or y >= h:
                        continue
                    row = obase + y * w + j - pw
                    crow = block + oy * ow
                    if sw == 1:  # unit stride: a loop LLVM vectorizes
                        for ox in range(lo, hi):
                            out[_u64(row + ox)] += cols[_u64(crow + ox)]
                    else:
                        for ox in range(lo, hi):
                            out[_u64(row + ox * sw)] += cols[_u64(crow + ox)]
"""

_DTYPES = kernels.PLANE_DTYPES


def _kernel(dtype_name: str):
    params = tuple(("scalar", "int64") for _ in range(10)) + (
        ("scalar", dtype_name), ("array", dtype_name), ("out", dtype_name))
    return kernels.plane_kernel(_FOLD, "_fold_planes", dtype_name, params)


def fold_planes(xp, cols, size, kernel_size, stride, padding, out=None):
    """`fold2d` of NumPy `cols` (N, C, kh, kw, OH, OW) into a new (N, C, *size) array (or into
    `out`, C-contiguous, when given), or None where the compiled form does not apply (then
    NumPy's strided adds run)."""
    # short path: fold_kernel.fold_planes (NumPy's own arrays only)
    if type(cols) is not numpy_backend.array_types[0] or not _short.on:
        return None
    dtype = cols.dtype
    if dtype not in _DTYPES or not cols.flags.c_contiguous or cols.size == 0:
        return None
    fn = _kernel(_DTYPES[dtype])
    if fn is None:
        return None
    (kh, kw), (sh, sw), (ph, pw) = kernel_size, stride, padding
    n, c, _, _, oh, ow = cols.shape
    h, w = size
    if out is None:
        out = xp.empty((n, c, h, w), dtype)
    elif not (out.flags.c_contiguous and out.dtype == dtype and out.shape == (n, c, h, w)):
        return None
    ints = [xp.int64(v) for v in (kh, kw, oh, ow, sh, sw, ph, pw, h, w)]
    zero = dtype.type(0)
    flat_cols, flat_out = cols.reshape(-1), out.reshape(-1)
    planes = n * c
    plane, hw = kh * kw * oh * ow, h * w

    def part(lo, hi):  # whole planes lo..hi
        fn(hi - lo, *ints, zero, flat_cols[lo * plane:hi * plane], flat_out[lo * hw:hi * hw])

    if parallel.threads() > 1 and flat_cols.size >= parallel.min_size() and planes > 1:
        parallel.halves(part, planes)
    else:
        part(0, planes)
    return out
