"""`F.pad` and `F.interpolate`, composed of slicing, gathers, concatenation and matmuls with
constant matrices, so their gradients come from those ops' rules (eager, graphs and jit)."""

from __future__ import annotations

import math

import numpy as np

from .. import ops
from ..errors import ShapeError
from ..ops.convert import as_tensor
from ..tensor import Tensor
from ..tensor.transfer import constant_like

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _along(x: Tensor, dim: int, key) -> Tensor:
    return x[(slice(None),) * dim + (key,)]


def _constant_block(x: Tensor, dim: int, width: int, value: float) -> Tensor:
    """`width` slices of `value` shaped like `x` except along `dim` (works for unknown dims)."""
    one = ops.full_like(_along(x, dim, slice(0, 1)), value)
    shape = [1] * x.ndim
    shape[dim] = width
    return one + constant_like(np.zeros(shape, x.dtype), x)


def _source_index(n: int, left: int, right: int, mode: str) -> np.ndarray:
    """Which input positions the padded positions -left .. n+right-1 read."""
    pos = np.arange(-left, n + right)
    if mode == "replicate":
        return np.clip(pos, 0, n - 1)
    if mode == "circular":
        return pos % n
    period = 2 * (n - 1)  # reflect: mirror about the first and last element
    pos = np.abs(pos) % period if period else np.zeros_like(pos)
    return np.where(pos >= n, period - pos, pos)


def pad(input: Tensor, pad: tuple | list, mode: str = "constant", value: float | None = None
        ) -> Tensor:
    """Pad (or crop, for negative sizes) the last dims: `pad` = (left, right) for the last dim,
    then (top, bottom) for the one before, ... Modes: constant (`value`, default 0), reflect,
    replicate, circular."""
    x = as_tensor(input)
    pad = [int(p) for p in pad]
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ShapeError(f"F.pad: pad {tuple(pad)} needs an even length of at most 2 * {x.ndim} "
                         f"for an input of shape {x.shape}")
    if mode not in _PAD_MODES:
        raise ValueError(f"F.pad: mode must be one of {_PAD_MODES}, got {mode!r}")
    if mode != "constant" and value not in (None, 0):
        raise ValueError(f"F.pad: value={value} is only meaningful with mode='constant'")
    for i in range(len(pad) // 2):
        dim = x.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        n = x.shape[dim]
        if left < 0 or right < 0:  # negative padding crops
            if n is None:
                raise ShapeError(f"F.pad: cropping dim {dim} needs its size known, got {x.shape}")
            x = _along(x, dim, slice(max(-left, 0), n - max(-right, 0)))
            left, right, n = max(left, 0), max(right, 0), x.shape[dim]
        if not (left or right):
            continue
        if mode == "constant":
            parts = [_constant_block(x, dim, left, value or 0.0)] if left else []
            parts.append(x)
            if right:
                parts.append(_constant_block(x, dim, right, value or 0.0))
            x = ops.concat(parts, dim)
            continue
        if n is None:
            raise ShapeError(f"F.pad: mode {mode!r} needs the size of dim {dim} known, got "
                             f"{x.shape}")
        if mode == "reflect" and (left >= n or right >= n):
            raise ShapeError(f"F.pad: reflect padding ({left}, {right}) must be smaller than the "
                             f"size {n} of dim {dim}")
        if mode == "circular" and (left > n or right > n):
            raise ShapeError(f"F.pad: circular padding ({left}, {right}) can be at most the size "
                             f"{n} of dim {dim}")
        x = _along(x, dim, constant_like(_source_index(n, left, right, mode), x))
    return x


# --- interpolate -----------------------------------------------------------------------------
def _weights(n_in: int, n_out: int, scale: float | None, mode: str,
             align_corners: bool) -> np.ndarray:
    """The (n_out, n_in) matrix that resamples one dim (PyTorch's coordinate rules); `scale`
    is 1/scale_factor when the user gave one, else n_in/n_out."""
    scale = n_in / n_out if scale is None else scale
    dst = np.arange(n_out, dtype=np.float64)
    m = np.zeros((n_out, n_in))
    if mode in ("nearest", "nearest-exact"):
        offset = 0.5 if mode == "nearest-exact" else 0.0
        src = np.minimum(np.floor((dst + offset) * scale).astype(np.int64), n_in - 1)
        m[np.arange(n_out), src] = 1.0
        return m
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    else:
        src = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    frac = src - i0
    np.add.at(m, (np.arange(n_out), i0), 1.0 - frac)
    np.add.at(m, (np.arange(n_out), i1), frac)
    return m


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of an (N, C, L) or (N, C, H, W) input to `size` or by
    `scale_factor`: modes nearest, nearest-exact, linear (3-d), bilinear (4-d)."""
    x = as_tensor(input)
    spatial = x.ndim - 2
    linear = {1: "linear", 2: "bilinear"}.get(spatial)
    if spatial not in (1, 2):
        raise ShapeError(f"F.interpolate: expects a 3-d or 4-d input, got shape {x.shape}")
    if mode not in ("nearest", "nearest-exact", linear):
        raise NotImplementedError(f"F.interpolate: mode {mode!r} for a {x.ndim}-d input is not "
                                  f"supported (nearest, nearest-exact, {linear})")
    if antialias:
        raise NotImplementedError("F.interpolate: antialias=True is not supported")
    if align_corners is not None and mode != linear:
        raise ValueError(f"F.interpolate: align_corners only applies to {linear} mode")
    if (size is None) == (scale_factor is None):
        raise ValueError("F.interpolate: give exactly one of size and scale_factor")
    n_in = tuple(x.shape[2:])
    if any(n is None for n in n_in):
        raise ShapeError(f"F.interpolate: the spatial dims of {x.shape} must be known")
    if size is not None:
        n_out = tuple(size) if isinstance(size, (tuple, list)) else (size,) * spatial
        scales = (None,) * spatial
    else:
        factors = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) else \
            (scale_factor,) * spatial
        n_out = tuple(int(math.floor(n * f)) for n, f in zip(n_in, factors))
        scales = (None,) * spatial if recompute_scale_factor else \
            tuple(1.0 / f for f in factors)
    if len(n_out) != spatial or any(int(n) < 1 for n in n_out):
        raise ShapeError(f"F.interpolate: output size {n_out} does not fit input {x.shape}")
    for axis, (a, b, s) in enumerate(zip(n_in, n_out, scales)):
        m = constant_like(_weights(a, int(b), s, mode, bool(align_corners)).astype(x.dtype), x)
        if axis == spatial - 1:  # the last dim: x @ M^T
            x = ops.matmul(x, ops.transpose(m, 0, 1))
        else:  # the height of a 4-d input: M @ x, broadcast over N and C
            x = ops.matmul(m, x)
    return x
