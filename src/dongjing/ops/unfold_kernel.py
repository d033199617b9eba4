"""unfold2d (im2col) on NumPy arrays as one compiled pass per (image, channel) plane.

NumPy's form (`nn.unfold_strided`) makes kh*kw strided copies of the padded input, each a loop
over rows of OW elements (24 on W7's second convolution) with NumPy's per-row overhead, after
padding the whole input into a new array. Here each input plane (a few KB) stays in cache
while its kh*kw column blocks are written, padding never materialized; unsigned indices keep
the unit-stride copy loop free of negative-index tests, so it vectorizes. A copy is exact: the
columns are NumPy's form's bit for bit. Used when numba is there, for C-contiguous
float32/float64 input and columns; `None` sends the caller to NumPy's form.
"""

from __future__ import annotations

from ..backends import numpy_backend
from ..cpu_kernels import kernels
from ..short_paths import declare as _declare_short_path
from ..short_paths import state as _short

_declare_short_path("unfold_kernel.unfold_planes", __name__, "unfold2d as one compiled (numba) "
                    "pass per plane instead of NumPy's kh*kw strided copies of the padded input")

_SOURCE = """def _unfold_planes(n, kh, kw, oh, ow, sh, sw, ph, pw, h, w, fill, x, out):
    plane = kh * kw * oh * ow
    hw = h * w
    for b in range(n):
        xbase = b * hw
        obase = b * plane
        for i in range(kh):
            for j in range(kw):
                lo = 0
                while lo < ow and lo * sw + j - pw < 0:
                    lo += 1
                hi = ow
                while hi > lo and (hi - 1) * sw + j - pw >= w:
                    hi -= 1
                block = obase + (i * kw + j) * oh * ow
                for oy in range(oh):
                    orow = block + oy * ow
                    y = oy * sh + i - ph
                    if y < 0 or y >= h:
                        for ox in range(ow):
                            out[_u64(orow + ox)] = fill
                        continue
                    for ox in range(lo):
                        out[_u64(orow + ox)] = fill
                    for ox in range(hi, ow):
                        out[_u64(orow + ox)] = fill
                    row = xbase + y * w + j - pw
                    if sw == 1:  # unit stride: a loop LLVM vectorizes
                        for ox in range(lo, hi):
                            out[_u64(orow + ox)] = x[_u64(row + ox)]
                    else:
                        for ox in range(lo, hi):
                            out[_u64(orow + ox)] = x[_u64(row + ox * sw)]
"""

_DTYPES = kernels.PLANE_DTYPES


def _kernel(dtype_name: str):
    params = tuple(("scalar", "int64") for _ in range(10)) + (
        ("scalar", dtype_name), ("array", dtype_name), ("out", dtype_name))
    return kernels.plane_kernel(_SOURCE, "_unfold_planes", dtype_name, params)


def unfold_planes(xp, x, out, kernel_size, stride, padding, pad_value) -> bool:
    """Write `unfold2d` of NumPy `x` (N, C, H, W) into `out` (N, C, kh, kw, OH, OW); False
    where the compiled form does not apply (then NumPy's strided copies run)."""
    # short path: unfold_kernel.unfold_planes (NumPy's own arrays only)
    array = numpy_backend.array_types[0]
    if not _short.on or type(x) is not array or type(out) is not array:
        return False
    dtype = x.dtype
    if (dtype not in _DTYPES or out.dtype != dtype or x.size == 0 or out.size == 0
            or not (x.flags.c_contiguous and out.flags.c_contiguous)):
        return False
    fn = _kernel(_DTYPES[dtype])
    if fn is None:
        return False
    (kh, kw), (sh, sw), (ph, pw) = kernel_size, stride, padding
    n, c, h, w = x.shape
    oh, ow = out.shape[4], out.shape[5]
    ints = [xp.int64(v) for v in (kh, kw, oh, ow, sh, sw, ph, pw, h, w)]
    fn(n * c, *ints, dtype.type(pad_value), x.reshape(-1), out.reshape(-1))
    return True
