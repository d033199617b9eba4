"""conv2d as one op with blocked im2col: forward, input gradient and weight gradient.

The composition `unfold2d` + `matmul` (F.conv2d's general path) writes every window of the
whole batch at once: (N, C*kh*kw, OH*OW), 42 MB for W7's second convolution, written once and
read by the GEMM, then again for the weight gradient and as the column gradient for fold2d.
Here the windows of a few images at a time go into one buffer of about `BLOCK_BYTES` that stays
in cache between the copy and the GEMM that reads it; the three ops below are closed under
differentiation (each one's gradients are the other two), so double backward needs nothing
else. Measured against the other options (bench/conv_options.py): see docs/performance.md.
"""

from __future__ import annotations

import numpy as np

from ..backends.buffer_pool import pool as _pool
from ..core.registry import Spec, binds, define
from ..dispatch import apply2
from ..errors import DTypeError, ShapeError
from ..short_paths import declare as _declare_short_path
from ..short_paths import state as _short
from .convert import as_tensor
from .fold_kernel import fold_planes
from .nn import _fold_forward, out_size, unfold_strided

_declare_short_path("conv.blocked", __name__, "F.conv2d as one conv2d op (blocked im2col per "
                    "few images) instead of the composition unfold2d + matmul over the batch")

BLOCK_BYTES = 4 << 20  # the windows of this many bytes' worth of images per GEMM (in cache)
# On a device every block costs its launches (kh*kw copies and a GEMM): one block for the
# batch wherever its windows fit this many bytes
DEVICE_BLOCK_BYTES = 512 << 20


def _empty(xp, shape, dtype):
    """An uninitialised array; NumPy's from the eager buffer pool, so that a step's large
    buffers are reused, not faulted in afresh (backends.buffer_pool)."""
    return _pool.empty(shape, np.dtype(dtype)) if xp is np else xp.empty(shape, dtype=dtype)


def _images_per_block(per_image: int, n: int, xp=np) -> int:
    budget = BLOCK_BYTES if xp is np else DEVICE_BLOCK_BYTES
    return max(1, min(n, budget // max(per_image, 1)))


def _check(op: str, a: Spec, b: Spec) -> None:
    if len(a.shape) != 4 or len(b.shape) != 4:
        raise ShapeError(f"{op}: expects two 4-d tensors, got shapes {a.shape} and {b.shape}")
    if a.dtype != b.dtype or a.dtype.kind != "f":
        raise DTypeError(f"{op}: expects two floating tensors of one dtype, got {a.dtype} and "
                         f"{b.dtype}")


def _spatial(size, kernel, stride, padding, op):
    return tuple(out_size(size[d], kernel[d], stride[d], padding[d], op) for d in (0, 1))


# --- forward: (N, C, H, W) x (O, C, kh, kw) -> (N, O, OH, OW) --------------------------------
def _conv_infer(x: Spec, w: Spec, stride, padding):
    _check("conv2d", x, w)
    if None in x.shape[2:] or None in w.shape[1:]:
        raise ShapeError(f"conv2d: the spatial dims of {x.shape} and the weight's {w.shape[1:]} "
                         "must be known")
    if x.shape[1] is not None and x.shape[1] != w.shape[1]:
        raise ShapeError(f"conv2d: input of shape {x.shape} does not fit a weight of shape "
                         f"{w.shape} (the input's channels must equal the weight's dim 1)")
    oh, ow = _spatial(x.shape[2:], w.shape[2:], stride, padding, "conv2d")
    return (x.shape[0], w.shape[0], oh, ow), x.dtype


def _conv_forward(xp, x, w, stride, padding):
    n, c = x.shape[:2]
    o, _, kh, kw = w.shape
    oh, ow = _spatial(x.shape[2:], (kh, kw), stride, padding, "conv2d")
    w2 = w.reshape(o, c * kh * kw)
    out = _empty(xp, (n, o, oh * ow), x.dtype)
    step = _images_per_block(c * kh * kw * oh * ow * x.itemsize, n, xp)
    buf = _empty(xp, (step, c, kh, kw, oh, ow), x.dtype)
    for s in range(0, n, step):
        e = min(n, s + step)
        cols = unfold_strided(xp, x[s:e], buf[: e - s], (kh, kw), stride, padding)
        xp.matmul(w2, cols.reshape(e - s, c * kh * kw, oh * ow), out=out[s:e])
    return out.reshape(n, o, oh, ow)


# --- input gradient: (N, O, OH, OW) x (O, C, kh, kw) -> (N, C, H, W) --------------------------
def _input_grad_infer(g: Spec, w: Spec, size, stride, padding):
    _check("conv2d_input_grad", g, w)
    want = _spatial(size, w.shape[2:], stride, padding, "conv2d_input_grad")
    if tuple(g.shape[2:]) != want or None not in (g.shape[1], w.shape[0]) and \
            g.shape[1] != w.shape[0]:
        raise ShapeError(f"conv2d_input_grad: gradient of shape {g.shape} does not fit a weight "
                         f"of shape {w.shape} over size {tuple(size)}")
    return (g.shape[0], w.shape[1], size[0], size[1]), g.dtype


def _input_grad_forward(xp, g, w, size, stride, padding):
    n, o, oh, ow = g.shape
    _, c, kh, kw = w.shape
    wt = xp.ascontiguousarray(w.reshape(o, c * kh * kw).T)
    g2 = g.reshape(n, o, oh * ow)
    out = _empty(xp, (n, c, size[0], size[1]), g.dtype)
    step = _images_per_block(c * kh * kw * oh * ow * g.itemsize, n, xp)
    buf = _empty(xp, (step, c * kh * kw, oh * ow), g.dtype)
    for s in range(0, n, step):
        e = min(n, s + step)
        cols = xp.matmul(wt, g2[s:e], out=buf[: e - s])
        cols = cols.reshape(e - s, c, kh, kw, oh, ow)
        if fold_planes(xp, cols, size, (kh, kw), stride, padding, out=out[s:e]) is None:
            out[s:e] = _fold_forward(xp, cols, size, (kh, kw), stride, padding)
    return out


# --- weight gradient: (N, C, H, W) x (N, O, OH, OW) -> (O, C, kh, kw) --------------------------
def _weight_grad_infer(x: Spec, g: Spec, kernel, stride, padding):
    _check("conv2d_weight_grad", x, g)
    want = _spatial(x.shape[2:], kernel, stride, padding, "conv2d_weight_grad")
    if tuple(g.shape[2:]) != want or None not in (x.shape[0], g.shape[0]) and \
            x.shape[0] != g.shape[0]:
        raise ShapeError(f"conv2d_weight_grad: gradient of shape {g.shape} does not fit an "
                         f"input of shape {x.shape} and kernel {tuple(kernel)}")
    return (g.shape[1], x.shape[1], kernel[0], kernel[1]), x.dtype


def _weight_grad_forward(xp, x, g, kernel, stride, padding):
    n, c = x.shape[:2]
    _, o, oh, ow = g.shape
    kh, kw = kernel
    g2 = g.reshape(n, o, oh * ow)
    total = xp.zeros((o, c * kh * kw), dtype=x.dtype)
    step = _images_per_block(c * kh * kw * oh * ow * x.itemsize, n, xp)
    buf = _empty(xp, (step, c, kh, kw, oh, ow), x.dtype)
    part = _empty(xp, (step, o, c * kh * kw), x.dtype)
    for s in range(0, n, step):
        e = min(n, s + step)
        cols = unfold_strided(xp, x[s:e], buf[: e - s], kernel, stride, padding)
        cols = cols.reshape(e - s, c * kh * kw, oh * ow)
        parts = xp.matmul(g2[s:e], cols.transpose(0, 2, 1), out=part[: e - s])
        for k in range(e - s):  # image by image, in order: the general path's sum over N
            total += parts[k]
    return total.reshape(o, c, kh, kw)


def takes_blocked(x, weight) -> bool:
    """Whether F.conv2d of these tensors is the conv2d op (else unfold2d + matmul, which also
    serves float16 and bfloat16 through float32).

    One input channel stays on the general path: its windows are kh*kw copies of the input and
    its GEMMs have an inner dimension of kh*kw; measured (bench/conv_dongjing.py) the blocked
    form was no faster on W7's first layer and 1.4x slower on the TF1 CNN's.
    """
    # short path: conv.blocked
    return (_short.on and x.dtype == weight.dtype and x.dtype.name in ("float32", "float64")
            and None not in tuple(weight.shape) and None not in tuple(x.shape[1:])
            and weight.shape[1] > 1)


def _attrs(stride, padding):
    return {"stride": tuple(stride), "padding": tuple(padding)}


_conv = define(
    "conv2d", forward=_conv_forward, infer=_conv_infer,
    grads=(lambda g, x, w, stride, padding: conv2d_input_grad(
               g, w, tuple(x.shape[2:]), stride, padding),
           lambda g, x, w, stride, padding: conv2d_weight_grad(
               x, g, tuple(w.shape[2:]), stride, padding)),
    grad_name="ConvolutionBackward0",
    onnx=lambda e, node, ins: e.node(
        "Conv", [ins[0], ins[1]], kernel_shape=list(node.inputs[1].shape[2:]),
        strides=list(node.attrs["stride"]), pads=[*node.attrs["padding"], *node.attrs["padding"]]))

_input_grad = define(
    "conv2d_input_grad", forward=_input_grad_forward, infer=_input_grad_infer,
    grads=(lambda gg, g, w, size, stride, padding: conv2d(gg, w, stride, padding),
           lambda gg, g, w, size, stride, padding: conv2d_weight_grad(
               gg, g, tuple(w.shape[2:]), stride, padding)),
    grad_name="ConvolutionBackwardInput0",
    onnx=None, onnx_reason="a gradient op (conv2d's input gradient): export the forward")

_weight_grad = define(
    "conv2d_weight_grad", forward=_weight_grad_forward, infer=_weight_grad_infer,
    grads=(lambda gg, x, g, kernel, stride, padding: conv2d_input_grad(
               g, gg, tuple(x.shape[2:]), stride, padding),
           lambda gg, x, g, kernel, stride, padding: conv2d(x, gg, stride, padding)),
    grad_name="ConvolutionBackwardWeight0",
    onnx=None, onnx_reason="a gradient op (conv2d's weight gradient): export the forward")


@binds(_conv)
def conv2d(x, weight, stride=(1, 1), padding=(0, 0)):
    """Cross-correlation of (N, C, H, W) `x` with (O, C, kh, kw) `weight`, no bias (blocked
    im2col); `stride` and `padding` are pairs. F.conv2d is the user-facing form."""
    return apply2(_conv, as_tensor(x), as_tensor(weight), **_attrs(stride, padding))


@binds(_input_grad)
def conv2d_input_grad(g, weight, size, stride=(1, 1), padding=(0, 0)):
    """conv2d's gradient with respect to its input of spatial `size` (a transposed conv)."""
    return apply2(_input_grad, as_tensor(g), as_tensor(weight),
                  size=tuple(int(d) for d in size), **_attrs(stride, padding))


@binds(_weight_grad)
def conv2d_weight_grad(x, g, kernel, stride=(1, 1), padding=(0, 0)):
    """conv2d's gradient with respect to its (O, C, *kernel) weight."""
    return apply2(_weight_grad, as_tensor(x), as_tensor(g),
                  kernel=tuple(int(k) for k in kernel), **_attrs(stride, padding))
