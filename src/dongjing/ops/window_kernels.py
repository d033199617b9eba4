"""Fast forms of the window ops on NumPy arrays: `fold2d` (col2im) as one compiled pass per
(image, channel) plane; `unfold2d` (im2col) and `max_pool2d_backward` as NumPy's own forms
over two halves of the batch at once.

fold2d: NumPy's form adds kh*kw strided slices of the columns into the whole padded output, so
the output (5.5 MB on W7's second convolution) streams through memory kh*kw times. Here each
plane of the output (a few KB) stays in cache while its kh*kw column blocks are added into it,
in the same (i, j) order from zero, so the sums are NumPy's bit for bit; padding is never
written. A compiled unfold and pooling gradient measured slower than NumPy's strided copies and
compares on one thread (their loops do not vectorize); what pays for those is the second
thread, and NumPy releases the GIL in them. Work of each image is independent, so the halves
compute exactly what one call computes.

`fold_planes` returns None where the compiled form does not apply (numba missing, another array
type or dtype, non-contiguous columns); the caller then runs NumPy's form.
"""

from __future__ import annotations

from ..backends import numpy_backend

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
                    for ox in range(lo, hi):
                        out[row + ox * sw] += cols[crow + ox]
"""

_DTYPES = ("float32", "float64")
_kernels: dict = {}


def _kernel(dtype_name: str):
    if dtype_name in _kernels:
        return _kernels[dtype_name]
    from ..compiler import kernels

    kernel = None
    if kernels.available():
        params = tuple(("scalar", "int64") for _ in range(10)) + (
            ("scalar", dtype_name), ("array", dtype_name), ("out", dtype_name))
        kernel = kernels.compile_kernel(_FOLD, "_fold_planes", {}, params)
    _kernels[dtype_name] = kernel
    return kernel


def fold_planes(xp, cols, size, kernel_size, stride, padding):
    """`fold2d` of NumPy `cols` (N, C, kh, kw, OH, OW) into a new (N, C, *size) array, or None
    where the compiled form does not apply (then NumPy's strided adds run)."""
    if type(cols) is not numpy_backend.array_types[0]:  # NumPy's own arrays only
        return None
    dtype = cols.dtype
    if dtype.name not in _DTYPES or not cols.flags.c_contiguous or cols.size == 0:
        return None
    fn = _kernel(dtype.name)
    if fn is None:
        return None
    (kh, kw), (sh, sw), (ph, pw) = kernel_size, stride, padding
    n, c, _, _, oh, ow = cols.shape
    h, w = size
    out = xp.empty((n, c, h, w), dtype)
    ints = [xp.int64(v) for v in (kh, kw, oh, ow, sh, sw, ph, pw, h, w)]
    zero = dtype.type(0)
    flat_cols, flat_out = cols.reshape(-1), out.reshape(-1)
    planes = n * c
    plane, hw = kh * kw * oh * ow, h * w

    def part(lo, hi):  # whole planes lo..hi
        fn(hi - lo, *ints, zero, flat_cols[lo * plane:hi * plane], flat_out[lo * hw:hi * hw])

    from ..compiler import parallel

    if parallel.threads() > 1 and flat_cols.size >= parallel.MIN_SIZE and planes > 1:
        parallel.halves(part, planes)
    else:
        part(0, planes)
    return out


def two_threads_pay(*arrays) -> bool:
    """Whether a NumPy form whose work is independent per image should run on two halves of
    the batch (the leading dim of `arrays`) at once: two threads allowed, NumPy arrays, and
    enough work for the hand-off to pay (see `compiler.parallel.split_leading`)."""
    from ..compiler import parallel

    ndarray = numpy_backend.array_types[0]
    return (parallel.threads() > 1 and all(type(a) is ndarray for a in arrays)
            and arrays[0].shape[0] > 1 and max(a.size for a in arrays) >= _MIN_SPLIT)


# Elements of the largest array below which one thread is faster. Measured on W7's shapes
# (2 cores): unfold2d of (64, 1, 28, 28), 0.39 M columns, 0.079 ms on one thread against 0.136
# on two; of (64, 8, 28, 28), 3.1 M columns, 0.62 against 0.40 ms.
_MIN_SPLIT = 1 << 20
