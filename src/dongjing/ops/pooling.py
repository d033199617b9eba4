"""Max pooling as two ops: `max_pool2d` (the largest value of each window) and its gradient
`max_pool2d_backward` (each window's gradient to its first largest value, or to the last NaN
of a window holding NaN, as PyTorch's kernel does).

Both work on strided views of the (padded) input, one per kernel offset, so a window is never
copied out: the forward is kh*kw `maximum` calls over the output, the backward as many compares
and a scatter per offset (the unfold-argmax-one-hot composition this replaces took 40 ms a
step on W7's (64, 64, 24, 24) input; these take a few).
"""

from __future__ import annotations

from .. import ops
from ..core import infer as inf
from ..core.registry import Spec, binds, define
from ..cpu_kernels import parallel
from ..dispatch import apply, apply1
from ..dtypes import is_floating
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from . import onnx_graph_rules
from .convert import as_tensor
from .nn import _pair, out_size, unfold2d, window_arguments
from .pool_kernel import max_pool_backward_planes
from .scatter import gather


def _pool_infer(x: Spec, kernel, stride, padding, op: str = "max_pool2d"):
    if len(x.shape) != 4:
        raise ShapeError(f"{op}: expects an (N, C, H, W) input, got shape {inf.fmt(x.shape)}")
    n, c, h, w = x.shape
    if h is None or w is None:
        raise ShapeError(f"{op}: the spatial dims of {inf.fmt(x.shape)} must be known")
    if any(2 * p > k for p, k in zip(padding, kernel)):
        raise ShapeError(f"{op}: padding {padding} must be at most half the kernel {kernel}")
    if any(padding) and not is_floating(x.dtype):
        raise DTypeError(f"{op}: padding a {x.dtype} tensor (it pads with -inf, which needs a "
                         "floating tensor)")
    oh = out_size(h, kernel[0], stride[0], padding[0], op)
    ow = out_size(w, kernel[1], stride[1], padding[1], op)
    return (n, c, oh, ow), x.dtype


def _padded(xp, x, padding):
    (ph, pw) = padding
    if not (ph or pw):
        return x
    return xp.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=-float("inf"))


def _offsets(kernel, stride, oh, ow):
    """The (row slice, column slice) of the padded input that kernel offset (i, j) reads for
    every output position, in row-major offset order (the order "first" refers to)."""
    (kh, kw), (sh, sw) = kernel, stride
    for i in range(kh):
        for j in range(kw):
            yield slice(i, i + sh * oh, sh), slice(j, j + sw * ow, sw)


def _max_pool_forward(xp, x, kernel, stride, padding):
    oh = out_size(x.shape[2], kernel[0], stride[0], padding[0], "max_pool2d")
    ow = out_size(x.shape[3], kernel[1], stride[1], padding[1], "max_pool2d")
    out = xp.empty((x.shape[0], x.shape[1], oh, ow), x.dtype)
    if parallel.numpy_halves_pay(x):  # halves of the batch at once
        parallel.split_leading(max_pool_strided, x.shape[0], (xp, x, kernel, stride, padding, out),
                      (False, True, False, False, False, True))
        return out
    return max_pool_strided(xp, x, kernel, stride, padding, out)


def max_pool_strided(xp, x, kernel, stride, padding, out):
    """The window maxima written into `out`: kh*kw `maximum` calls over strided views of the
    padded input (any backend; each image's part depends on that image alone)."""
    xpad = _padded(xp, x, padding)
    first = True
    for rows, cols in _offsets(kernel, stride, out.shape[2], out.shape[3]):
        view = xpad[:, :, rows, cols]
        if first:
            out[...] = view
            first = False
        else:
            xp.maximum(out, view, out=out)  # NaN wins
    return out


def _max_pool_grad(g, x, kernel, stride, padding, *, out):
    return max_pool2d_backward(g, x, out, kernel, stride, padding)


_max_pool = define("max_pool2d", forward=_max_pool_forward, infer=_pool_infer,
                   grads=(_max_pool_grad,), grad_name="MaxPool2DWithIndicesBackward0",
                   onnx=onnx_graph_rules.max_pool2d, public="max_pool2d",
                   doc="The largest value of each window of an (N, C, H, W) tensor.")


def _backward_infer(g: Spec, x: Spec, pooled: Spec, kernel, stride, padding):
    shape, dtype = _pool_infer(x, kernel, stride, padding, "max_pool2d_backward")
    for name, spec in (("gradient", g), ("output", pooled)):
        if len(spec.shape) != 4 or any(a is not None and b is not None and a != b
                                       for a, b in zip(spec.shape, shape)):
            raise ShapeError(f"max_pool2d_backward: the {name} has shape {inf.fmt(spec.shape)}; "
                             f"the pooled shape is {inf.fmt(shape)}")
    return tuple(x.shape), g.dtype


def _max_pool_backward_forward(xp, g, x, pooled, kernel, stride, padding):
    flags = _gradient_flags(xp, g, pooled)  # of the whole batch, as one call would take them
    planes = max_pool_backward_planes(xp, g, x, pooled, kernel, stride, padding, flags)
    if planes is not None:
        return planes
    if not parallel.numpy_halves_pay(g, x):
        return max_pool_backward_strided(xp, g, x, pooled, kernel, stride, padding, flags)
    out = xp.empty(x.shape, g.dtype)
    parallel.split_leading(max_pool_backward_strided, x.shape[0],
                  (xp, g, x, pooled, kernel, stride, padding, flags, out),
                  (False, True, True, True, False, False, False, False, True))
    return out


def _gradient_flags(xp, g, pooled) -> tuple:
    """(some window's maximum is NaN, every gradient is finite): how the gradient is made."""
    # g * hit is branch-free (a masked copy with a data-dependent mask runs at a tenth of the
    # speed), and exact while g is finite: inf * 0 would leave NaN where 0 belongs
    return bool((pooled != pooled).any()), bool(xp.isfinite(g).all())


def max_pool_backward_strided(xp, g, x, pooled, kernel, stride, padding, flags=None,
                              out=None):
    """The gradient as compares and products over strided views, one per kernel offset (any
    backend), written into `out` (shaped like `x`) when given; each image's part depends on
    that image alone. `flags`: `_gradient_flags`, when known."""
    (ph, pw) = padding
    h, w = x.shape[2], x.shape[3]
    xpad = _padded(xp, x, padding)
    if out is not None and not (ph or pw):
        grad = out
        grad[...] = 0
    else:
        grad = xp.zeros(xpad.shape, dtype=g.dtype)
    overlapping = stride[0] < kernel[0] or stride[1] < kernel[1]
    with_nan, finite = flags if flags is not None else _gradient_flags(xp, g, pooled)
    real = None  # where the padded input is not padding: a window of only -inf values gives
    if ph or pw:  # its gradient to its first real position (the padding is -inf too)
        real = xp.zeros((1, 1) + xpad.shape[2:], dtype=bool)
        real[:, :, ph:ph + h, pw:pw + w] = True
    hits = []
    for rows, cols in _offsets(kernel, stride, pooled.shape[2], pooled.shape[3]):
        hit = xp.equal(xpad[:, :, rows, cols], pooled)
        if real is not None:
            hit &= real[:, :, rows, cols]
        hits.append(hit)
    _keep_first(xp, hits)  # a window's first largest value
    if with_nan:  # PyTorch's kernel takes every NaN it meets: a NaN window's last NaN
        nans = [xpad[:, :, rows, cols] != xpad[:, :, rows, cols]
                for rows, cols in _offsets(kernel, stride, pooled.shape[2], pooled.shape[3])]
        _keep_first(xp, nans[::-1])
        for hit, nan in zip(hits, nans):
            hit |= nan  # a window holds a NaN only where its maximum is NaN (no equal hit)
    for hit, (rows, cols) in zip(hits, _offsets(kernel, stride, pooled.shape[2],
                                                  pooled.shape[3])):
        if finite and not overlapping:
            xp.multiply(g, hit, out=grad[:, :, rows, cols])
            continue
        part = xp.multiply(g, hit) if finite else xp.where(hit, g, 0)
        if overlapping:
            grad[:, :, rows, cols] += part
        else:
            grad[:, :, rows, cols] = part
    if not (ph or pw):
        return grad
    if out is None:
        return grad[:, :, ph:ph + h, pw:pw + w]
    out[...] = grad[:, :, ph:ph + h, pw:pw + w]
    return out


def _keep_first(xp, hits):
    """Each window's hit masks (one per kernel offset, in order) cut to the first hit."""
    taken = hits[0].copy()
    for hit in hits[1:]:
        xp.greater(hit, taken, out=hit)  # hit and not taken
        taken |= hit


def _pick_first_max(gg, g, x, pooled, kernel, stride, padding):
    """The gradient's own gradient with respect to `g`: `gg` read at each window's first
    largest value (composed from unfold2d, so double backward needs no further op)."""
    def windows(t, pad_value):
        return ops.flatten(unfold2d(t, kernel, stride, padding, pad_value=pad_value), 2, 3)

    # the backward's own rule: the first real position equal to the maximum, padding never (it
    # is -inf too, like a window of -inf values); in a NaN window, its last NaN
    values = windows(x, -float("inf"))
    hits = ops.eq(values, ops.unsqueeze(pooled, 2))
    real = windows(ops.ones_like(x), 0.0)
    first = ops.argmax(ops.mul(ops.cast(hits, x.dtype), real), dim=2, keepdim=True)
    last_nan = ops.argmax(ops.flip(ops.cast(ops.ne(values, values), x.dtype), 2), dim=2,
                          keepdim=True)  # counted from the window's end
    gg_windows = windows(gg, 0.0)
    at_first = gather(gg_windows, 2, first)
    at_last_nan = gather(ops.flip(gg_windows, 2), 2, last_nan)
    return ops.squeeze(ops.where(ops.unsqueeze(ops.ne(pooled, pooled), 2), at_last_nan,
                                 at_first), 2)


_max_pool_backward = define(
    "max_pool2d_backward", forward=_max_pool_backward_forward, infer=_backward_infer,
    grads=(_pick_first_max, None, None), public="max_pool2d_backward", onnx=None,
    onnx_reason="a gradient op: export the forward computation",
    doc="The gradient of max_pool2d: each window's gradient at its first largest value.",
)


@binds(_max_pool)
def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    """The largest value of each window (stride defaults to the kernel size; padding reads
    -inf). A dilation other than 1 and `ceil_mode=True` are refused."""
    dilation = tuple(dilation) if isinstance(dilation, (tuple, list)) else (dilation,)
    if any(d != 1 for d in dilation) or ceil_mode:
        raise NotImplementedError("max_pool2d: dilation other than 1 and ceil_mode=True are not "
                                  "supported")
    kernel, stride, padding = window_arguments("max_pool2d", kernel_size, stride, padding)
    return apply1(_max_pool, as_tensor(input), kernel=kernel, stride=stride, padding=padding)


@binds(_max_pool_backward)
def max_pool2d_backward(g, x, out, kernel, stride, padding):
    """`g` (the gradient of `out = max_pool2d(x, ...)`) sent to each window's first largest
    value of `x`; zero elsewhere. Overlapping windows add up."""
    return apply(_max_pool_backward, as_tensor(g), as_tensor(x), as_tensor(out),
                 kernel=_pair(kernel, "kernel_size"), stride=_pair(stride, "stride"),
                 padding=_pair(padding, "padding"))
