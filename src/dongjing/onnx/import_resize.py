"""ONNX Resize in nearest and linear modes, one axis at a time: the
source positions follow ONNX's coordinate transformation (computed at import time from the
static sizes), then an index_select (nearest) or a blend of two index_selects (linear), so the
result runs as dongjing ops and differentiates."""

from __future__ import annotations

import numpy as np

from .. import ops
from ..tensor import Tensor
from .errors import OnnxImportError

_COORDINATES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                "tf_half_pixel_for_nn")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _source(mode: str, n_in: int, n_out: int, scale: float) -> np.ndarray:
    """The input coordinate each of the `n_out` outputs samples (ONNX's formulas)."""
    dst = np.arange(n_out, dtype=np.float64)
    if mode == "align_corners":
        return dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    if mode == "asymmetric":
        return dst / scale
    if mode == "tf_half_pixel_for_nn":
        return (dst + 0.5) / scale
    if mode == "pytorch_half_pixel" and n_out == 1:
        return np.zeros(1)
    return (dst + 0.5) / scale - 0.5


def _nearest_index(src: np.ndarray, rule: str, n_in: int) -> np.ndarray:
    frac = src - np.floor(src)
    if rule == "floor":
        index = np.floor(src)
    elif rule == "ceil":
        index = np.ceil(src)
    elif rule == "round_prefer_ceil":
        index = np.where(frac == 0.5, np.ceil(src), np.round(src))
    else:
        index = np.where(frac == 0.5, np.floor(src), np.round(src))
    return np.clip(index, 0, n_in - 1).astype(np.int64)


def _resize_axis(x: Tensor, axis: int, n_out: int, scale: float, attrs: dict) -> Tensor:
    n_in = x.shape[axis]
    coordinates = _text(attrs.get("coordinate_transformation_mode", "half_pixel"))
    src = _source(coordinates, n_in, n_out, scale)
    if _text(attrs.get("mode", "nearest")) == "nearest":
        index = _nearest_index(src, _text(attrs.get("nearest_mode", "round_prefer_floor")), n_in)
        return ops.index_select(x, axis, Tensor._make(index))
    src = np.clip(src, 0, n_in - 1)
    low = np.floor(src).astype(np.int64)
    high = np.minimum(low + 1, n_in - 1)
    shape = [1] * x.ndim
    shape[axis] = n_out
    weight = Tensor._make((src - low).astype(x.dtype).reshape(shape))
    below = ops.index_select(x, axis, Tensor._make(low))
    above = ops.index_select(x, axis, Tensor._make(high))
    return below + (above - below) * weight


def _check(attrs: dict) -> None:
    mode = _text(attrs.get("mode", "nearest"))
    if mode not in ("nearest", "linear"):
        raise OnnxImportError(f"mode={mode!r} is not supported (nearest, linear)")
    coordinates = _text(attrs.get("coordinate_transformation_mode", "half_pixel"))
    if coordinates not in _COORDINATES:
        raise OnnxImportError(f"coordinate_transformation_mode={coordinates!r} is not "
                              f"supported ({', '.join(_COORDINATES)})")
    if _text(attrs.get("nearest_mode", "round_prefer_floor")) not in _NEAREST:
        raise OnnxImportError(f"nearest_mode={attrs['nearest_mode']!r} is not supported")
    if attrs.get("antialias", 0):
        raise OnnxImportError("antialias=1 is not supported")
    if _text(attrs.get("keep_aspect_ratio_policy", "stretch")) != "stretch":
        raise OnnxImportError("keep_aspect_ratio_policy other than stretch is not supported")


def _resize(ctx, ins, attrs):
    _check(attrs)
    x = ins[0]
    if any(d is None for d in x.shape):
        raise OnnxImportError(f"the input's shape {x.shape} must be known")
    if ctx.opset < 11:  # Resize-10: (X, scales)
        scales_in, sizes_in = ins[1], None
    else:
        scales_in = ins[2] if len(ins) > 2 else None
        sizes_in = ins[3] if len(ins) > 3 else None
    scales = None if scales_in is None else np.asarray(ctx.static(scales_in, "scales"),
                                                       np.float64).reshape(-1)
    sizes = None if sizes_in is None else np.asarray(ctx.static(sizes_in, "sizes"),
                                                     np.int64).reshape(-1)
    if scales is not None and scales.size == 0:
        scales = None
    if (scales is None) == (sizes is None or sizes.size == 0):
        raise OnnxImportError("give exactly one of scales and sizes")
    axes = [a + x.ndim if a < 0 else a for a in attrs.get("axes", range(x.ndim))]
    for i, axis in enumerate(axes):
        n_in = x.shape[axis]
        if scales is not None:
            scale, n_out = float(scales[i]), int(np.floor(n_in * scales[i]))
        else:
            n_out = int(sizes[i])
            scale = n_out / n_in
        if n_out <= 0:
            raise OnnxImportError(f"axis {axis}: {n_in} resized to {n_out} elements")
        if n_out != n_in or scale != 1.0:
            x = _resize_axis(x, axis, n_out, scale, attrs)
    return x


RESIZE_IMPORTS: dict = {"Resize": _resize}
