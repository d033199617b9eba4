"""tf.nn's convolutions and pooling (conv2d, conv2d_transpose, depthwise_conv2d, max_pool,
avg_pool) in NHWC or NCHW, with TF's SAME padding (the odd pixel goes after), on dongjing's
unfold2d/fold2d/matmul ops, so their gradients are those ops' rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import ops as _ops
from ...errors import GraphError, ShapeError
from ...nn import functional as _F
from ...nn.resample import pad as _pad
from ...ops.nn import fold2d, unfold2d
from ...tensor import Tensor
from .dynamic_shape import constant_value
from .graphs import tf_function
from .math_ops import _t
from .unsupported import not_provided

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...types import TensorLike

_NHWC = ("NHWC", None)


def _layout(what: str, data_format) -> bool:
    """Whether `data_format` is channels-last (NHWC); NCHW gives False; others raise."""
    if data_format in _NHWC:
        return True
    if data_format == "NCHW":
        return False
    raise GraphError(f"{what}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")


def _spatial(what: str, values, name: str, nhwc: bool, default: int = 1) -> tuple[int, int]:
    """(h, w) from TF's 4-list (batch and channel entries must be 1), a pair or an int."""
    if values is None:
        return default, default
    if isinstance(values, (int, np.integer)):
        return int(values), int(values)
    values = [int(v) for v in values]
    if len(values) == 1:
        return values[0], values[0]
    if len(values) == 2:
        return values[0], values[1]
    if len(values) != 4:
        raise ShapeError(f"{what}: {name} must have 1, 2 or 4 entries, got {values}")
    h, w = (values[1], values[2]) if nhwc else (values[2], values[3])
    outer = (values[0], values[3]) if nhwc else (values[0], values[1])
    if outer != (1, 1):
        not_provided(f"{what} with {name} {values} over the batch or channel dim")
    return h, w


def _padding(what: str, padding) -> str:
    if isinstance(padding, (list, tuple)):
        not_provided(f"{what} with explicit padding {padding} (give 'SAME' or 'VALID')")
    padding = str(padding).upper()
    if padding not in ("SAME", "VALID"):
        raise GraphError(f"{what}: padding must be 'SAME' or 'VALID', got {padding!r}")
    return padding


def same_pads(what: str, size, kernel: int, stride: int) -> tuple[int, int]:
    """TF's SAME padding of one dim: (before, after), the odd pixel after."""
    if size is None:
        raise ShapeError(f"{what}: padding='SAME' needs the spatial dims known when the graph "
                         "is built")
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def _to_nchw(x, nhwc: bool):
    return _ops.permute(x, (0, 3, 1, 2)) if nhwc else x


def _from_nchw(x, nhwc: bool):
    return _ops.permute(x, (0, 2, 3, 1)) if nhwc else x


def _pad_same(what: str, x, kernel, stride, value: float = 0.0):
    """NCHW `x` padded as TF's SAME would for this kernel and stride (and the pads)."""
    top, bottom = same_pads(what, x.shape[2], kernel[0], stride[0])
    left, right = same_pads(what, x.shape[3], kernel[1], stride[1])
    if top == bottom == left == right == 0:
        return x, (0, 0, 0, 0)
    return _pad(x, (left, right, top, bottom), value=value), (top, bottom, left, right)


def _dilate(weight, dilation: tuple[int, int]):
    """An (O, C, kh, kw) weight spread to ((kh-1)*dh+1, (kw-1)*dw+1) with zeros between taps."""
    dh, dw = dilation
    if (dh, dw) == (1, 1):
        return weight
    o, c, kh, kw = weight.shape
    w = _ops.reshape(weight, (o, c, kh, 1, kw, 1))
    zeros = _ops.zeros_like(w)
    w = _ops.concat([w] + [zeros] * (dh - 1), 3)
    w = _ops.concat([w] + [_ops.zeros_like(w)] * (dw - 1), 5)
    w = _ops.reshape(w, (o, c, kh * dh, kw * dw))
    return w[:, :, :(kh - 1) * dh + 1, :(kw - 1) * dw + 1]


def _check_rank(what: str, x, w, w_name: str = "filter") -> None:
    if x.ndim != 4 or w.ndim != 4:
        raise ShapeError(f"{what}: needs a 4-d input and a 4-d {w_name}, got shapes {x.shape} "
                         f"and {w.shape}")


@tf_function
def conv2d(input: TensorLike, filter: TensorLike | None = None,  # noqa: A002
           strides: int | Sequence[int] | None = None, padding: str | None = None,
           use_cudnn_on_gpu: bool = True, data_format: str = "NHWC",
           dilations: int | Sequence[int] | None = None, name: str | None = None,
           filters: TensorLike | None = None
           ) -> Tensor:
    """2-d cross-correlation of a 4-d input with an (kh, kw, in, out) filter."""
    what = "tf.nn.conv2d"
    filter = filters if filter is None else filter  # noqa: A001
    if filter is None or strides is None or padding is None:
        raise GraphError(f"{what} needs filter, strides and padding")
    nhwc = _layout(what, data_format)
    x, w = _t(input), _t(filter)
    _check_rank(what, x, w)
    channels = x.shape[3] if nhwc else x.shape[1]
    if channels is not None and w.shape[2] is not None and channels != w.shape[2]:
        raise ShapeError(f"{what}: input of shape {x.shape} has {channels} channels, the filter "
                         f"of shape {w.shape} expects {w.shape[2]}")
    stride = _spatial(what, strides, "strides", nhwc)
    dilation = _spatial(what, dilations, "dilations", nhwc)
    if dilation != (1, 1) and stride != (1, 1):
        raise GraphError(f"{what}: strides {strides} and dilations {dilations} cannot both be "
                         "above 1 (TensorFlow refuses too)")
    weight = _dilate(_ops.permute(w, (3, 2, 0, 1)), dilation)  # (O, C, kh', kw')
    x = _to_nchw(x, nhwc)
    if _padding(what, padding) == "SAME":
        x, _ = _pad_same(what, x, weight.shape[2:], stride)
    return _from_nchw(_F.conv2d(x, weight, None, stride, 0), nhwc)


@tf_function
def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", name=None, input=None, filters=None,
                     dilations=None):
    """The gradient of conv2d with respect to its input ("deconvolution"): `value` of conv2d's
    output shape becomes `output_shape`, with an (kh, kw, out, in) filter."""
    what = "tf.nn.conv2d_transpose"
    value = input if value is None else value
    filter = filters if filter is None else filter  # noqa: A001
    if value is None or filter is None or output_shape is None or strides is None:
        raise GraphError(f"{what} needs value, filter, output_shape and strides")
    nhwc = _layout(what, data_format)
    if dilations is not None and _spatial(what, dilations, "dilations", nhwc) != (1, 1):
        not_provided(f"{what}(dilations=...) above 1")
    x, w = _t(value), _t(filter)
    _check_rank(what, x, w)
    out_shape = _shape_list(what, output_shape)
    if len(out_shape) != 4:
        raise ShapeError(f"{what}: output_shape must have 4 entries, got {out_shape}")
    oh, ow = (out_shape[1], out_shape[2]) if nhwc else (out_shape[2], out_shape[3])
    out_c = out_shape[3] if nhwc else out_shape[1]
    kh, kw, wc_out, wc_in = w.shape
    if out_c != wc_out:
        raise ShapeError(f"{what}: output_shape {out_shape} has {out_c} channels, the filter of "
                         f"shape {w.shape} gives {wc_out}")
    stride = _spatial(what, strides, "strides", nhwc)
    x = _to_nchw(x, nhwc)  # (N, Cin, H, W)
    h, wd = x.shape[2], x.shape[3]
    if _padding(what, padding) == "SAME":
        pads = same_pads(what, oh, kh, stride[0]) + same_pads(what, ow, kw, stride[1])
        expect = (-(-oh // stride[0]), -(-ow // stride[1]))
    else:
        pads = (0, 0, 0, 0)
        expect = ((oh - kh) // stride[0] + 1, (ow - kw) // stride[1] + 1)
    if (h, wd) != expect:
        raise ShapeError(f"{what}: an input of spatial size {(h, wd)} does not come from "
                         f"output_shape {out_shape} by conv2d (that gives {expect})")
    # cols[n, (o, i, j), p] = sum_c W[i, j, o, c] x[n, c, p]
    mat = _ops.reshape(_ops.permute(w, (2, 0, 1, 3)), (wc_out * kh * kw, wc_in))
    cols = _ops.matmul(mat, _ops.reshape(x, (-1, wc_in, h * wd)))
    cols = _ops.reshape(cols, (-1, wc_out, kh, kw, h, wd))
    full = (oh + pads[0] + pads[1], ow + pads[2] + pads[3])
    # fold2d's windows reach (h - 1) * s + k; the rows past that (VALID's remainder) stay zero
    reach = ((h - 1) * stride[0] + kh, (wd - 1) * stride[1] + kw)
    out = fold2d(cols, reach, (kh, kw), stride, 0)
    extra = (full[0] - reach[0], full[1] - reach[1])
    if extra != (0, 0):
        out = _pad(out, (0, extra[1], 0, extra[0]))
    out = out[:, :, pads[0]:pads[0] + oh, pads[2]:pads[2] + ow]
    return _from_nchw(out, nhwc)


def _shape_list(what: str, shape) -> list[int]:
    if isinstance(shape, Tensor):
        known = constant_value(shape)
        if known is None:
            not_provided(f"{what} with an output_shape computed at run time")
        shape = known
    return [int(d) for d in shape]


@tf_function
def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None,  # noqa: A002
                     data_format=None, dilations=None):
    """Each input channel convolved with its own `channel_multiplier` filters: an
    (kh, kw, in, multiplier) filter gives in * multiplier output channels."""
    what = "tf.nn.depthwise_conv2d"
    nhwc = _layout(what, data_format)
    x, w = _t(input), _t(filter)
    _check_rank(what, x, w)
    kh, kw, c, m = w.shape
    channels = x.shape[3] if nhwc else x.shape[1]
    if channels is not None and channels != c:
        raise ShapeError(f"{what}: input of shape {x.shape} has {channels} channels, the filter "
                         f"of shape {w.shape} expects {c}")
    stride = _spatial(what, strides, "strides", nhwc)
    dilation = _spatial(what, dilations if dilations is not None else rate, "dilations", nhwc)
    weight = _dilate(_ops.permute(w, (2, 3, 0, 1)), dilation)  # (C, M, kh', kw')
    keff = weight.shape[2:]
    x = _to_nchw(x, nhwc)
    if _padding(what, padding) == "SAME":
        x, _ = _pad_same(what, x, keff, stride)
    cols = unfold2d(x, keff, stride, 0)  # (N, C, kh, kw, OH, OW)
    oh, ow = cols.shape[4], cols.shape[5]
    cols = _ops.reshape(cols, (-1, c, 1, keff[0] * keff[1], oh * ow))
    taps = _ops.reshape(weight, (1, c, m, keff[0] * keff[1], 1))
    out = _ops.sum(cols * taps, 3)  # (N, C, M, OH*OW)
    return _from_nchw(_ops.reshape(out, (-1, c * m, oh, ow)), nhwc)


def _pool_args(what: str, value, ksize, strides, padding, data_format):
    nhwc = _layout(what, data_format)
    x = _t(value)
    if x.ndim != 4:
        raise ShapeError(f"{what}: needs a 4-d input, got shape {x.shape}")
    if ksize is None or strides is None:
        raise GraphError(f"{what} needs ksize and strides")
    kernel = _spatial(what, ksize, "ksize", nhwc)
    stride = _spatial(what, strides, "strides", nhwc)
    return nhwc, _to_nchw(x, nhwc), kernel, stride, _padding(what, padding)


@tf_function
def max_pool(value: TensorLike | None = None, ksize: int | Sequence[int] | None = None,
             strides: int | Sequence[int] | None = None, padding: str | None = None,
             data_format: str = "NHWC", name: str | None = None,
             input: TensorLike | None = None) -> Tensor:  # noqa: A002
    """Largest value of each window; SAME pads with -inf (padding never wins)."""
    what = "tf.nn.max_pool"
    value = input if value is None else value
    nhwc, x, kernel, stride, mode = _pool_args(what, value, ksize, strides, padding,
                                               data_format)
    if mode == "SAME":
        x, _ = _pad_same(what, x, kernel, stride, value=-np.inf)
    return _from_nchw(_ops.pooling.max_pool2d(x, kernel, stride, 0), nhwc)


@tf_function
def avg_pool(value=None, ksize=None, strides=None, padding=None, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """Mean of each window; with SAME, over the window's real pixels only (as TF counts)."""
    what = "tf.nn.avg_pool"
    value = input if value is None else value
    nhwc, x, kernel, stride, mode = _pool_args(what, value, ksize, strides, padding,
                                               data_format)
    pads = (0, 0, 0, 0)
    if mode == "SAME":
        size = (x.shape[2], x.shape[3])
        x, pads = _pad_same(what, x, kernel, stride)
    out = _ops.mean(unfold2d(x, kernel, stride, 0), dim=(2, 3))
    if pads != (0, 0, 0, 0):
        out = out * _window_share(size, kernel, stride, pads, out.dtype)
    return _from_nchw(out, nhwc)


def _window_share(size, kernel, stride, pads, dtype) -> np.ndarray:
    """(OH, OW): window area / real pixels in the window, for each SAME-padded window."""
    real = np.pad(np.ones(size), ((pads[0], pads[1]), (pads[2], pads[3])))
    oh = (real.shape[0] - kernel[0]) // stride[0] + 1
    ow = (real.shape[1] - kernel[1]) // stride[1] + 1
    counts = np.empty((oh, ow))
    for i in range(oh):
        for j in range(ow):
            r, c = i * stride[0], j * stride[1]
            counts[i, j] = real[r:r + kernel[0], c:c + kernel[1]].sum()
    return (kernel[0] * kernel[1] / counts).astype(dtype)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """TF 1.15's alias of max_pool."""
    return max_pool(input, ksize, strides, padding, data_format)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """TF 1.15's alias of avg_pool."""
    return avg_pool(input, ksize, strides, padding, data_format)
