"""Neural-network primitives: sliding windows (unfold2d / fold2d, the im2col pair behind
convolution and pooling), one_hot, and dropout's random mask."""

from __future__ import annotations

import math

from .. import dtypes
from ..backends import backend_of
from ..core import infer as inf
from ..core.registry import Cost, Kind, Spec, binds, define
from ..core.validation import check_int
from ..cpu_kernels import parallel
from ..devices.random import generator
from ..dispatch import apply1
from ..dtypes import is_floating
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out
from . import onnx_graph_rules
from .convert import as_tensor
from .elementwise import exp, mul
from .erf_series import erf_array
from .fold_kernel import fold_planes
from .unfold_kernel import unfold_planes


def out_size(size, kernel: int, stride: int, padding: int, op: str = "unfold2d"):
    """Output length of a window of `kernel` sliding with `stride` over `size` + 2*`padding`."""
    if size is None:
        return None
    n = (size + 2 * padding - kernel) // stride + 1
    if n < 1:
        raise ShapeError(
            f"{op}: kernel {kernel} with padding {padding} does not fit in an input of size {size}"
        )
    return n


# --- unfold2d / fold2d: (N, C, H, W) <-> (N, C, kh, kw, OH, OW) -----------------------------
def _unfold_infer(x: Spec, kernel, stride, padding, pad_value=0.0):
    if len(x.shape) != 4:
        raise ShapeError(f"unfold2d: expects an (N, C, H, W) input, got shape {inf.fmt(x.shape)}")
    n, c, h, w = x.shape
    if h is None or w is None:
        raise ShapeError(f"unfold2d: the spatial dims of {inf.fmt(x.shape)} must be known")
    oh = out_size(h, kernel[0], stride[0], padding[0])
    ow = out_size(w, kernel[1], stride[1], padding[1])
    if any(padding) and not is_floating(x.dtype) and not math.isfinite(pad_value):
        raise DTypeError(f"unfold2d: padding a {x.dtype} tensor with {pad_value} "
                         "(max-pooling with padding needs a floating tensor)")
    return (n, c, kernel[0], kernel[1], oh, ow), x.dtype


def _unfold_forward(xp, x, kernel, stride, padding, pad_value=0.0):
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    n, c, h, w = x.shape
    oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    out = xp.empty((n, c, kh, kw, oh, ow), dtype=x.dtype)
    return _unfold_out(xp, x, out, kernel, stride, padding, pad_value)


def _unfold_out(xp, x, out, kernel, stride, padding, pad_value=0.0):
    """The windows written into `out` (new storage: the compiler may plan a buffer for it)."""
    args = (xp, x, out, kernel, stride, padding, pad_value)
    if parallel.numpy_halves_pay(x, out):  # halves of the batch at once
        parallel.split_leading(unfold_strided, x.shape[0], args, (False, True, True) + (False,) * 4)
        return out
    return unfold_strided(*args)


def unfold_strided(xp, x, out, kernel, stride, padding, pad_value=0.0):
    """unfold2d as kh*kw strided copies from the padded input into `out` (any backend; each
    image's columns depend on that image alone)."""
    if unfold_planes(xp, x, out, kernel, stride, padding, pad_value):  # one pass, numba
        return out
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    oh, ow = out.shape[4], out.shape[5]
    if ph or pw:
        x = xp.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=pad_value)
    for i in range(kh):
        for j in range(kw):
            out[:, :, i, j] = x[:, :, i : i + sh * oh : sh, j : j + sw * ow : sw]
    return out


def _unfold_grad(g, x, kernel, stride, padding, pad_value=0.0):
    return fold2d(g, x.shape[2:], kernel, stride, padding)


_unfold = define("unfold2d", forward=_unfold_forward, infer=_unfold_infer,
                 forward_out=_unfold_out,
                 grads=(_unfold_grad,), grad_name="Im2ColBackward0", public="unfold2d",
                 onnx=onnx_graph_rules.unfold2d)


def _fold_infer(cols: Spec, size, kernel, stride, padding):
    if len(cols.shape) != 6:
        raise ShapeError(
            f"fold2d: expects (N, C, kh, kw, OH, OW) columns, got shape {inf.fmt(cols.shape)}"
        )
    want = (kernel[0], kernel[1], out_size(size[0], kernel[0], stride[0], padding[0], "fold2d"),
            out_size(size[1], kernel[1], stride[1], padding[1], "fold2d"))
    if any(a is not None and a != b for a, b in zip(cols.shape[2:], want)):
        raise ShapeError(
            f"fold2d: columns of shape {inf.fmt(cols.shape)} do not match kernel {kernel}, "
            f"stride {stride}, padding {padding} over size {tuple(size)}"
        )
    return (cols.shape[0], cols.shape[1], size[0], size[1]), cols.dtype


def _fold_forward(xp, cols, size, kernel, stride, padding):
    planes = fold_planes(xp, cols, size, kernel, stride, padding)  # one pass, numba
    return planes if planes is not None else fold_strided(xp, cols, size, kernel, stride,
                                                          padding)


def fold_strided(xp, cols, size, kernel, stride, padding):
    """fold2d as kh*kw strided adds into the padded output (any backend; the reference the
    compiled per-plane form matches bit for bit)."""
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    n, c, _, _, oh, ow = cols.shape
    out = xp.zeros((n, c, size[0] + 2 * ph, size[1] + 2 * pw), dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):
            out[:, :, i : i + sh * oh : sh, j : j + sw * ow : sw] += cols[:, :, i, j]
    return out[:, :, ph : ph + size[0], pw : pw + size[1]]


_fold = define("fold2d", forward=_fold_forward, infer=_fold_infer,
               grads=(lambda g, cols, size, kernel, stride, padding: unfold2d(
                   g, kernel, stride, padding),),
               grad_name="Col2ImBackward0", public="fold2d",
               onnx=None, onnx_reason="a gradient op (col2im): export the forward computation")


_MINIMUM = {"kernel_size": 1, "stride": 1, "padding": 0}  # of each window argument


def _pair(v, name: str, func: str = "unfold2d") -> tuple[int, int]:
    """A window argument (`kernel_size`, `stride`, `padding`: an int or a pair of ints) as a
    pair, checked: integers, kernel and stride >= 1, padding >= 0 (ArgumentError naming
    `func`), before any division by a stride or a kernel."""
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ShapeError(f"{func}: {name} must be an int or a pair of ints, got {v!r}")
        pair = (v[0], v[1])
    else:
        pair = (v, v)
    minimum = _MINIMUM.get(name)
    return tuple(check_int(func, name, d, minimum) for d in pair)


def window_arguments(func: str, kernel_size, stride, padding) -> tuple:
    """`(kernel, stride, padding)` of a convolution or pooling call as checked pairs (stride
    None means the kernel size), errors naming `func`."""
    kernel = _pair(kernel_size, "kernel_size", func)
    return (kernel, kernel if stride is None else _pair(stride, "stride", func),
            _pair(padding, "padding", func))


@binds(_unfold)
def unfold2d(x, kernel, stride=1, padding=0, pad_value: float = 0.0):
    """Every `kernel` window of an (N, C, H, W) tensor: shape (N, C, kh, kw, OH, OW) (im2col).

    Out-of-bounds positions (within `padding`) read `pad_value`.
    """
    x = as_tensor(x)
    return apply1(_unfold, x, kernel=_pair(kernel, "kernel_size"), stride=_pair(stride, "stride"),
                  padding=_pair(padding, "padding"), pad_value=float(pad_value))


@binds(_fold)
def fold2d(cols, size, kernel, stride=1, padding=0):
    """The adjoint of `unfold2d`: windows summed back into an (N, C, H, W) tensor of `size`."""
    return apply1(_fold, as_tensor(cols), size=tuple(int(d) for d in size),
                  kernel=_pair(kernel, "kernel_size"), stride=_pair(stride, "stride"),
                  padding=_pair(padding, "padding"))


# --- one_hot (no gradient) -------------------------------------------------------------------
def _one_hot_infer(y: Spec, num_classes, dtype, ignore_index=None):
    if y.dtype.kind not in "iu":
        raise DTypeError(f"one_hot: expects integer class indices, got {y.dtype}")
    return tuple(y.shape) + (num_classes,), dtype


def check_classes(y, num_classes, ignore_index=None):
    """Raise ShapeError when a class index (other than `ignore_index`) is outside
    [0, num_classes). Reads the labels on the host: skipped while a CUDA graph is captured
    (its replays check their label feeds first, compiler/cuda_graphs.py)."""
    if backend_of(y).capturing():
        return
    if y.size and (y.min() < 0 or y.max() >= num_classes):
        kept = y if ignore_index is None else y[y != ignore_index]
        if kept.size and (kept.min() < 0 or kept.max() >= num_classes):
            raise ShapeError(
                f"one_hot: class indices must lie in [0, {num_classes}); got values from "
                f"{kept.min()} to {kept.max()}"
            )


def _one_hot_forward(xp, y, num_classes, dtype, ignore_index=None):
    out = xp.empty(tuple(y.shape) + (num_classes,), dtype)
    return _one_hot_out(xp, y, num_classes, dtype, out, ignore_index)


def _one_hot_out(xp, y, num_classes, dtype, out, ignore_index=None):
    # label == class, compared into `out` (an ignored label outside [0, C) matches no class)
    check_classes(y, num_classes, ignore_index)
    xp.equal(y[..., None], xp.arange(num_classes), out=out)
    if ignore_index is not None and 0 <= ignore_index < num_classes:
        out[..., ignore_index] = 0
    return out


_one_hot = define("one_hot", forward=_one_hot_forward, infer=_one_hot_infer,
                  forward_out=_one_hot_out, onnx=onnx_graph_rules.one_hot, public="one_hot")


@binds(_one_hot)
def one_hot(y, num_classes: int, dtype=None, ignore_index: int | None = None):
    """Rows of the identity picked by integer labels `y`: shape `y.shape + (num_classes,)`;
    a label equal to `ignore_index` gives a row of zeros."""
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.default_float
    if ignore_index is not None:
        return apply1(_one_hot, as_tensor(y), num_classes=int(num_classes), dtype=dtype,
                      ignore_index=int(ignore_index))
    return apply1(_one_hot, as_tensor(y), num_classes=int(num_classes), dtype=dtype)


# --- dropout mask (random: graphs must not fold or merge it) ---------------------------------
def _dropout_mask_infer(x: Spec, p):
    if not is_floating(x.dtype):
        raise DTypeError(f"dropout_mask: expects a floating point tensor, got {x.dtype}")
    return x.shape, x.dtype


def _dropout_mask_forward(xp, x, p):
    keep = xp.asarray(generator().random(x.shape)) >= p  # drawn on the host, one stream
    return keep.astype(x.dtype) * x.dtype.type(1.0 / (1.0 - p))


_dropout_mask = define("dropout_mask", forward=_dropout_mask_forward,
                       infer=_dropout_mask_infer, random=True, public="dropout_mask",
                       onnx=None, onnx_reason="random: export the model in eval mode, where "
                       "dropout is the identity")


@binds(_dropout_mask)
def dropout_mask(x, p: float):
    """A fresh random mask shaped like `x`: 0 with probability `p`, else 1 / (1 - p)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout_mask: p must be in [0, 1), got {p}")
    return apply1(_dropout_mask, as_tensor(x), p=float(p))


def _uniform_like_infer(x: Spec, low, high):
    if x.dtype.kind != "f":
        raise DTypeError(f"uniform_like: expects a floating point tensor, got {x.dtype}")
    return x.shape, x.dtype


def _uniform_like_forward(xp, x, low, high):
    draw = generator().uniform(low, high, x.shape)  # drawn on the host, one stream
    return xp.asarray(draw).astype(x.dtype)


_uniform_like = define("uniform_like", forward=_uniform_like_forward,
                       infer=_uniform_like_infer, random=True, public="uniform_like",
                       onnx=None, onnx_reason="random: export the model in eval mode",
                       doc="Draws of U(low, high) shaped like x.")


@binds(_uniform_like)
def uniform_like(x, low: float = 0.0, high: float = 1.0):
    """Fresh draws of U(low, high) with `x`'s shape and dtype (dongjing's seeded generator;
    in a graph, new draws on every run). `x`'s values are not read."""
    if not low <= high:
        raise ValueError(f"uniform_like: need low <= high, got {low} and {high}")
    return apply1(_uniform_like, as_tensor(x), low=float(low), high=float(high))


# --- erf (for the exact GELU) ------------------------------------------------------------------
def _erf_forward(xp, x):
    return erf_array(xp, x)


def _erf_grad(g, x):
    return mul(g, mul(exp(mul(mul(x, x), -1.0)), 2.0 / math.sqrt(math.pi)))


_erf = define("erf", forward=_erf_forward, infer=inf.floating("erf"), grads=(_erf_grad,),
              kind=Kind.ELEMENTWISE, cost=Cost.TRANSCENDENTAL, onnx="Erf", public="erf",
              methods="erf")


@binds(_erf)
@accepts_out
def erf(input: Tensor) -> Tensor:
    """The error function, elementwise (to the precision of its dtype)."""
    return apply1(_erf, as_tensor(input))
