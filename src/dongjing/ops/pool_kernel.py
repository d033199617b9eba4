"""max_pool2d's gradient on NumPy arrays as one compiled pass per (image, channel) plane.

NumPy's form (`pooling.max_pool_backward_strided`) makes, per kernel offset, a compare, two
boolean updates and a product over stride-2 views of the input and the gradient: about a dozen
passes over W7's 9.4 MB input, 19 ms a step on one thread. Here each window is read twice: its
first position equal to the window's maximum (in a window whose maximum is NaN, its last NaN,
as PyTorch's kernel takes every NaN it meets) receives the gradient, the others receive what
NumPy's form writes there (`g * 0`, a signed zero, while every gradient is finite; +0
otherwise), positions in no window +0, so the result is NumPy's form's bit for bit.
Non-overlapping windows without padding only (W7's and most CNNs' 2x2 pooling); overlapping or
padded windows keep NumPy's form. Two threads take half of the planes each where the parallel
setting allows. `None` sends the caller to NumPy's form.
"""

from __future__ import annotations

from ..backends import numpy_backend
from ..backends.buffer_pool import pool as _pool
from ..cpu_kernels import kernels, parallel
from ..short_paths import declare as _declare_short_path
from ..short_paths import state as _short

_declare_short_path("pool_kernel.max_pool_backward", __name__, "max_pool2d's gradient as one "
                    "compiled (numba) pass per plane instead of NumPy's per-offset compares")

_SOURCE = """def _max_pool_back(n, h, w, oh, ow, kh, kw, sh, sw, with_nan, finite, zero, g, x,
                   pooled, out):
    hw = h * w
    for b in range(n):
        base = b * hw
        for k in range(hw):
            out[_u64(base + k)] = 0
        for oy in range(oh):
            for ox in range(ow):
                q = _u64((b * oh + oy) * ow + ox)
                top = pooled[q]
                gv = g[q]
                li = -1
                lj = -1
                if with_nan != 0 and top != top:  # a NaN window: its last NaN
                    for i in range(kh):
                        row = base + (oy * sh + i) * w + ox * sw
                        for j in range(kw):
                            v = x[_u64(row + j)]
                            if v != v:
                                li = i
                                lj = j
                else:  # its first position equal to the maximum
                    for i in range(kh):
                        row = base + (oy * sh + i) * w + ox * sw
                        for j in range(kw):
                            if li < 0 and x[_u64(row + j)] == top:
                                li = i
                                lj = j
                for i in range(kh):
                    row = base + (oy * sh + i) * w + ox * sw
                    for j in range(kw):
                        at = _u64(row + j)
                        if i == li and j == lj:
                            out[at] = gv
                        elif finite != 0:
                            out[at] = gv * zero
"""

_DTYPES = kernels.PLANE_DTYPES


def _kernel(dtype_name: str):
    params = tuple(("scalar", "int64") for _ in range(10)) + (
        ("scalar", dtype_name), ("array", dtype_name), ("array", dtype_name),
        ("array", dtype_name), ("out", dtype_name))
    return kernels.plane_kernel(_SOURCE, "_max_pool_back", dtype_name, params)


def max_pool_backward_planes(xp, g, x, pooled, kernel_size, stride, padding, flags):
    """max_pool2d's gradient (`pooling.max_pool_backward_strided`'s bits) as a new array, or
    None where the compiled form does not apply. `flags`: (some maximum is NaN, every gradient
    is finite) of the whole batch."""
    # short path: pool_kernel.max_pool_backward (NumPy's own arrays only)
    array = numpy_backend.array_types[0]
    if not _short.on or not all(type(a) is array for a in (g, x, pooled)):
        return None
    (kh, kw), (sh, sw), (ph, pw) = kernel_size, stride, padding
    dtype = x.dtype
    if (ph or pw or sh < kh or sw < kw or dtype not in _DTYPES or x.size == 0
            or not (g.dtype == pooled.dtype == dtype)
            or not all(a.flags.c_contiguous for a in (g, x, pooled))):
        return None
    fn = _kernel(_DTYPES[dtype])
    if fn is None:
        return None
    n, c, h, w = x.shape
    oh, ow = pooled.shape[2], pooled.shape[3]
    out = _pool.empty(x.shape, dtype)  # reused step to step (backends.buffer_pool)
    with_nan, finite = flags
    ints = [xp.int64(v) for v in (h, w, oh, ow, kh, kw, sh, sw, int(with_nan), int(finite))]
    zero = dtype.type(0)
    flat = [a.reshape(-1) for a in (g, x, pooled, out)]
    hw, ohw = h * w, oh * ow

    def part(lo, hi):  # whole planes lo..hi
        fn(hi - lo, *ints, zero, flat[0][lo * ohw:hi * ohw], flat[1][lo * hw:hi * hw],
           flat[2][lo * ohw:hi * ohw], flat[3][lo * hw:hi * hw])

    planes = n * c
    if parallel.threads() > 1 and x.size >= parallel.min_size() and planes > 1:
        parallel.halves(part, planes)
    else:
        part(0, planes)
    return out
