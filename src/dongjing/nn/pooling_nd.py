"""Pooling over 1, 2 or 3 spatial dims: max (with PyTorch's indices), average, power-average
(LP) and adaptive pooling, and max unpooling. A box is a product of intervals, so the max or
sum over it is taken one spatial dim at a time (strided slices combined elementwise), all with
dongjing ops: gradients, static graphs and `dj.jit` come from the ops used."""

from __future__ import annotations

import numpy as np

from .. import dtypes, ops
from ..errors import ArgumentError, ShapeError
from ..ops.convert import as_tensor
from ..tensor import Tensor
from ..tensor.transfer import constant_like
from .resample import pad as _pad

__all__ = ["max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d",
           "max_pool3d_with_indices", "avg_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
           "max_unpool1d", "max_unpool2d", "max_unpool3d"]


def tuple_of(name: str, what: str, value, k: int) -> tuple:
    """`value` as k ints (one int is repeated)."""
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * k
    if len(values) != k:
        raise ArgumentError(f"{name}: {what} needs {k} values, got {value!r}")
    return tuple(int(v) for v in values)


def spatial_input(name: str, input, k: int) -> Tensor:
    """The input with k known spatial dims after one or two leading dims."""
    x = as_tensor(input)
    if x.ndim not in (k + 1, k + 2):
        raise ShapeError(f"{name}: expects a {k + 1}-d (unbatched) or {k + 2}-d input, got "
                         f"shape {x.shape}")
    if any(n is None for n in x.shape[-k:]):
        raise ShapeError(f"{name}: the spatial dims of {x.shape} must be known")
    return x


def pooled_size(n: int, kernel: int, stride: int, padding: int, dilation: int,
                ceil_mode: bool) -> int:
    """PyTorch's output length of a pooling window sweep."""
    span = n + 2 * padding - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= n + padding:
        out -= 1
    return out


def _windows(name, x, k, kernel_size, stride, padding, dilation, ceil_mode):
    kernel = tuple_of(name, "kernel_size", kernel_size, k)
    stride = kernel if stride is None or stride == [] or stride == () else \
        tuple_of(name, "stride", stride, k)
    padding = tuple_of(name, "padding", padding, k)
    dilation = tuple_of(name, "dilation", dilation, k)
    if min(kernel + stride + dilation) < 1 or min(padding) < 0:
        raise ArgumentError(f"{name}: kernel_size, stride and dilation must be positive and "
                            f"padding non-negative")
    if any(2 * p > q for p, q in zip(padding, kernel)):
        raise ArgumentError(f"{name}: padding {padding} must be at most half the kernel "
                            f"{kernel}")
    sizes = [pooled_size(n, q, s, p, d, ceil_mode)
             for n, q, s, p, d in zip(x.shape[-k:], kernel, stride, padding, dilation)]
    if min(sizes) < 1:
        raise ShapeError(f"{name}: input of shape {x.shape} is too small for kernel {kernel}")
    return kernel, stride, padding, dilation, sizes


def _slices(x, dim, kernel, stride, padding, dilation, out, fill):
    """The `kernel` strided views along `dim` whose elementwise combination pools that dim."""
    n = x.shape[dim]
    need = (out - 1) * stride + dilation * (kernel - 1) + 1
    right = max(need - n - padding, 0)
    width = [0, 0] * (x.ndim - 1 - dim % x.ndim) + [padding, right]
    padded = _pad(x, tuple(width), value=fill) if padding or right else x
    views = []
    for i in range(kernel):
        key = [slice(None)] * x.ndim
        start = i * dilation
        key[dim] = slice(start, start + (out - 1) * stride + 1, stride)
        views.append(padded[tuple(key)])
    return views


def _max_values(x, k, kernel, stride, padding, dilation, sizes):
    for axis in range(k):
        dim = x.ndim - k + axis
        views = _slices(x, dim, kernel[axis], stride[axis], padding[axis], dilation[axis],
                        sizes[axis], float("-inf"))
        x = views[0]
        for view in views[1:]:
            x = ops.maximum(x, view)
    return x


def _max_indices(x, y, k, kernel, stride, padding, dilation, sizes):
    """The flat spatial index of the first (row-major) maximum of each window, as PyTorch's
    `return_indices` gives: the smallest index among the window's elements equal to the max."""
    spatial = tuple(x.shape[-k:])
    flat = np.arange(int(np.prod(spatial)), dtype=np.float64).reshape(spatial)
    index = constant_like(flat.astype(x.dtype if x.dtype.kind == "f" else np.float64), x)
    big = float(np.prod(spatial))
    views_x, views_i = [x], [index]
    for axis in range(k):
        dim_x, dim_i = x.ndim - k + axis, axis
        new_x, new_i = [], []
        for vx, vi in zip(views_x, views_i):
            new_x += _slices(vx, dim_x, kernel[axis], stride[axis], padding[axis],
                             dilation[axis], sizes[axis], float("-inf"))
            new_i += _slices(vi, dim_i, kernel[axis], stride[axis], padding[axis],
                             dilation[axis], sizes[axis], big)
        views_x, views_i = new_x, new_i
    best = None
    for vx, vi in zip(views_x, views_i):
        candidate = ops.where(ops.eq(vx, y), vi + ops.zeros_like(vx), ops.full_like(vx, big))
        best = candidate if best is None else ops.minimum(best, candidate)
    return ops.cast(best.detach(), dtypes.int64)


def _max_pool(name, input, k, kernel_size, stride, padding, dilation, ceil_mode,
              return_indices):
    x = spatial_input(name, input, k)
    kernel, stride, padding, dilation, sizes = _windows(name, x, k, kernel_size, stride,
                                                        padding, dilation, ceil_mode)
    y = _max_values(x, k, kernel, stride, padding, dilation, sizes)
    if not return_indices:
        return y
    return y, _max_indices(x.detach(), y.detach(), k, kernel, stride, padding, dilation, sizes)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False):
    """1-d max pooling and the flat index of each maximum."""
    return _max_pool("max_pool1d_with_indices", input, 1, kernel_size, stride, padding,
                     dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False):
    """2-d max pooling and the flat (H*W) index of each maximum."""
    return _max_pool("max_pool2d_with_indices", input, 2, kernel_size, stride, padding,
                     dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False):
    """3-d max pooling and the flat (D*H*W) index of each maximum."""
    return _max_pool("max_pool3d_with_indices", input, 3, kernel_size, stride, padding,
                     dilation, ceil_mode, True)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The largest value of each (D, H, W) window (and its index with `return_indices`)."""
    return _max_pool("max_pool3d", input, 3, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def _divisors(n, kernel, stride, padding, out, count_include_pad) -> np.ndarray:
    starts = np.arange(out) * stride - padding
    ends = np.minimum(starts + kernel, n + padding)
    if count_include_pad:
        return (ends - starts).astype(np.float64)
    return (np.minimum(ends, n) - np.maximum(starts, 0)).astype(np.float64)


def _avg_pool(name, input, k, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    x = spatial_input(name, input, k)
    if x.dtype.kind != "f":
        raise ArgumentError(f"{name}: expects a floating point input, got {x.dtype}")
    kernel, stride, padding, _, sizes = _windows(name, x, k, kernel_size, stride, padding, 1,
                                                 ceil_mode)
    divisor = np.ones(())
    spatial = tuple(x.shape[-k:])
    for axis in range(k):
        dim = x.ndim - k + axis
        views = _slices(x, dim, kernel[axis], stride[axis], padding[axis], 1, sizes[axis], 0.0)
        x = views[0]
        for view in views[1:]:
            x = x + view
        counts = _divisors(spatial[axis], kernel[axis], stride[axis], padding[axis],
                           sizes[axis], count_include_pad)
        divisor = np.multiply.outer(divisor, counts)
    if divisor_override:
        return x / float(divisor_override)
    return x / constant_like(divisor.astype(x.dtype), x)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None):
    """The mean of each (D, H, W) window (PyTorch's divisor rules)."""
    return _avg_pool("avg_pool3d", input, 3, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _lp_pool(name, input, k, norm_type, kernel_size, stride, ceil_mode):
    x = as_tensor(input)
    kernel = tuple_of(name, "kernel_size", kernel_size, k)
    powered = ops.pow(x, float(norm_type))
    mean = _avg_pool(name, powered, k, kernel, stride, 0, ceil_mode, True, None)
    total = ops.sign(mean) * ops.relu(ops.abs(mean)) * float(np.prod(kernel))
    return ops.pow(total, 1.0 / float(norm_type))


def lp_pool1d(input, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
    """(sum of x^p over each window)^(1/p)."""
    return _lp_pool("lp_pool1d", input, 1, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
    """(sum of x^p over each (H, W) window)^(1/p)."""
    return _lp_pool("lp_pool2d", input, 2, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
    """(sum of x^p over each (D, H, W) window)^(1/p)."""
    return _lp_pool("lp_pool3d", input, 3, norm_type, kernel_size, stride, ceil_mode)


def _adaptive_bounds(n: int, out: int) -> list:
    return [((i * n) // out, -((-(i + 1) * n) // out)) for i in range(out)]


def _output_sizes(name, x, k, output_size) -> tuple:
    sizes = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * k
    if len(sizes) != k:
        raise ArgumentError(f"{name}: output_size needs {k} values, got {output_size!r}")
    sizes = tuple(int(n) if s is None else int(s) for s, n in zip(sizes, x.shape[-k:]))
    if min(sizes) < 1:
        raise ArgumentError(f"{name}: output_size {output_size} must be positive")
    return sizes


def _adaptive(name, input, k, output_size, reduce_max, return_indices=False):
    x = spatial_input(name, input, k)
    sizes = _output_sizes(name, x, k, output_size)
    y = x
    for axis in range(k):
        dim = x.ndim - k + axis
        parts = []
        for lo, hi in _adaptive_bounds(x.shape[dim], sizes[axis]):
            key = [slice(None)] * x.ndim
            key[dim] = slice(lo, hi)
            window = y[tuple(key)]
            parts.append(ops.amax(window, dim, keepdim=True) if reduce_max
                         else ops.mean(window, dim, keepdim=True))
        y = ops.concat(parts, dim) if len(parts) > 1 else parts[0]
    if not return_indices:
        return y
    return y, _adaptive_indices(x.detach(), y.detach(), k, sizes)


def _adaptive_indices(x, y, k, sizes):
    spatial = tuple(x.shape[-k:])
    flat = np.arange(int(np.prod(spatial))).reshape(spatial)
    bounds = [_adaptive_bounds(n, o) for n, o in zip(spatial, sizes)]
    rows = []
    for cell in np.ndindex(*sizes):
        key = tuple(slice(*bounds[a][cell[a]]) for a in range(k))
        window = x[(Ellipsis,) + key]
        lead = tuple(window.shape[:-k])
        block = ops.reshape(window, (-1 if None in lead else int(np.prod(lead)), -1))
        local = ops.argmax(block, 1)  # the first maximum, row-major
        cells = constant_like(flat[key].reshape(-1), block)
        rows.append(ops.reshape(ops.index_select(cells, 0, local),
                                tuple(-1 if n is None else n for n in lead) + (1,)))
    stacked = ops.concat(rows, -1) if len(rows) > 1 else rows[0]
    lead = tuple(-1 if n is None else n for n in x.shape[:-k])
    return ops.reshape(stacked, lead + tuple(sizes))


def adaptive_avg_pool1d(input, output_size):
    """Average pooling of (N, C, L) to a fixed length, with PyTorch's windows."""
    return _adaptive("adaptive_avg_pool1d", input, 1, output_size, False)


def adaptive_avg_pool3d(input, output_size):
    """Average pooling of (N, C, D, H, W) to a fixed size, with PyTorch's windows."""
    return _adaptive("adaptive_avg_pool3d", input, 3, output_size, False)


def adaptive_max_pool1d(input, output_size, return_indices: bool = False):
    """Max pooling of (N, C, L) to a fixed length (and the indices with `return_indices`)."""
    return _adaptive("adaptive_max_pool1d", input, 1, output_size, True, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices: bool = False):
    """Max pooling of (N, C, H, W) to a fixed size (None keeps that dim)."""
    return _adaptive("adaptive_max_pool2d", input, 2, output_size, True, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices: bool = False):
    """Max pooling of (N, C, D, H, W) to a fixed size (None keeps that dim)."""
    return _adaptive("adaptive_max_pool3d", input, 3, output_size, True, return_indices)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices: bool = False):
    """`adaptive_max_pool1d` and its indices."""
    return _adaptive("adaptive_max_pool1d_with_indices", input, 1, output_size, True, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices: bool = False):
    """`adaptive_max_pool2d` and its indices."""
    return _adaptive("adaptive_max_pool2d_with_indices", input, 2, output_size, True, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices: bool = False):
    """`adaptive_max_pool3d` and its indices."""
    return _adaptive("adaptive_max_pool3d_with_indices", input, 3, output_size, True, True)


def _max_unpool(name, input, indices, k, kernel_size, stride, padding, output_size):
    x, idx = spatial_input(name, input, k), as_tensor(indices)
    if idx.shape != x.shape or idx.dtype.kind not in "iu":
        raise ShapeError(f"{name}: indices must be integers of the input's shape {x.shape}, "
                         f"got {idx.dtype} of shape {idx.shape}")
    kernel = tuple_of(name, "kernel_size", kernel_size, k)
    stride = kernel if stride is None else tuple_of(name, "stride", stride, k)
    padding = tuple_of(name, "padding", padding, k)
    default = tuple((n - 1) * s - 2 * p + q for n, s, p, q in
                    zip(x.shape[-k:], stride, padding, kernel))
    if output_size is None:
        size = default
    else:
        size = tuple(int(n) for n in tuple(output_size)[-k:])
        if any(abs(a - b) >= s for a, b, s in zip(size, default, stride)):
            raise ShapeError(f"{name}: output_size {tuple(output_size)} is not within a stride "
                             f"of the default {default}")
    lead = tuple(x.shape[:-k])
    known = tuple(-1 if n is None else n for n in lead)
    flat_x = ops.reshape(x, known + (-1,))
    flat_i = ops.reshape(idx, known + (-1,))
    total = int(np.prod(size))
    zeros = ops.zeros_like(flat_x[..., :1]) * constant_like(np.zeros(total, x.dtype), x)
    out = ops.scatter(zeros, x.ndim - k, flat_i, flat_x)
    return ops.reshape(out, known + size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Put each value back at its `indices` (from max_pool1d) in a zero tensor."""
    return _max_unpool("max_unpool1d", input, indices, 1, kernel_size, stride, padding,
                       output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Put each value back at its `indices` (from max_pool2d) in a zero tensor."""
    return _max_unpool("max_unpool2d", input, indices, 2, kernel_size, stride, padding,
                       output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Put each value back at its `indices` (from max_pool3d) in a zero tensor."""
    return _max_unpool("max_unpool3d", input, indices, 3, kernel_size, stride, padding,
                       output_size)

