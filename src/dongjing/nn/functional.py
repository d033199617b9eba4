"""`dj.nn.functional` (import as F): layers as functions, composed of dongjing ops.

Activations, linear, convolution and pooling, dropout, normalization, embedding; the losses
live in `losses.py` and are re-exported here.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes, ops
from ..autocasting import autocast_policy
from ..errors import DTypeError, ShapeError
from ..ops import conv as conv_op
from ..ops import erf, sigmoid, tanh, unfold2d
from ..ops.convert import as_tensor
from ..ops.nn import dropout_mask, window_arguments
from ..tensor import Tensor
from ..tensor.inplace import run_inplace
from ..tensor.out_argument import accepts_out
from ..tensor.transfer import constant_like
from .losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
)
from .resample import interpolate, pad
from .updates import update_buffer

if TYPE_CHECKING:
    from ..types import DTypeLike

Size = int | tuple[int, int]  # a kernel size, stride or padding: one int, or (height, width)

__all__ = [
    "relu", "tanh", "sigmoid", "gelu", "softmax", "log_softmax", "linear", "conv2d",
    "max_pool2d", "avg_pool2d", "dropout", "embedding", "layer_norm", "batch_norm", "one_hot",
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy_with_logits",
    "binary_cross_entropy", "leaky_relu", "silu", "elu", "normalize", "conv1d",
    "adaptive_avg_pool2d", "dropout2d", "pad", "interpolate", "multi_head_attention_forward",
    "scaled_dot_product_attention",
]


# --- activations ---------------------------------------------------------------------------
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), exact (erf) or with PyTorch's tanh approximation (`approximate="tanh"`)."""
    x = input
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * (tanh(inner) + 1.0) * 0.5
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return x * (erf(x * (1.0 / math.sqrt(2.0))) + 1.0) * 0.5


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(input, 0); `inplace=True` writes the result into `input` and returns it."""
    return _applied(input, "relu", ops.relu, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope * x."""
    def compute(t):
        return ops.where(ops.gt(t, 0.0), t, t * negative_slope)

    return _applied(input, "leaky_relu", compute, inplace)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (also called swish)."""
    return _applied(input, "silu", lambda t: t * sigmoid(t), inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha * (exp(x) - 1)."""
    def compute(t):
        negative = (ops.exp(ops.minimum(t, 0.0)) - 1.0) * alpha  # exp never sees a large x
        return ops.where(ops.gt(t, 0.0), t, negative)

    return _applied(input, "elu", compute, inplace)


def _applied(x, name: str, compute, inplace: bool) -> Tensor:
    """`compute(x)`, or with `inplace=True` that value written into `x` (PyTorch's in-place
    activations: the same values and gradients; a leaf that requires grad is refused)."""
    x = as_tensor(x)
    if inplace:
        return run_inplace(x, f"{name}_", compute)
    return compute(x)


@autocast_policy("normalize")
@accepts_out
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """x / max(||x||_p, eps) along `dim`."""
    x = as_tensor(input)
    if p == 2:
        power_sum = ops.sum(x * x, dim, keepdim=True)
    else:
        power_sum = ops.sum(ops.pow(ops.abs(x), float(p)), dim, keepdim=True)
    # max(s ** (1/p), eps) == max(s, eps ** p) ** (1/p), and the clamp keeps the root's
    # gradient finite where the norm is zero
    clamped = ops.clip(power_sum, float(eps) ** p)
    norm = ops.sqrt(clamped) if p == 2 else ops.pow(clamped, 1.0 / p)
    return x / norm


def implicit_dim(name: str, ndim: int, stacklevel: int) -> int:
    """PyTorch's dim for a softmax called without one (0 for 0-, 1- and 3-d inputs, else 1),
    with its deprecation warning."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


@autocast_policy("softmax")
def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: DTypeLike | None = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim` (`dtype`: the input cast first; without `dim`,
    PyTorch's implicit choice, with its warning at `_stacklevel`)."""
    x = as_tensor(input)
    if dim is None:
        dim = implicit_dim("softmax", x.ndim, _stacklevel)
    return ops.softmax(x, dim, dtype)


@autocast_policy("log_softmax")
def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: DTypeLike | None = None) -> Tensor:
    """log(softmax(x)) along `dim`, computed stably (arguments as `softmax`)."""
    x = as_tensor(input)
    if dim is None:
        dim = implicit_dim("log_softmax", x.ndim, _stacklevel)
    return ops.log_softmax(x, dim, dtype)


# --- linear, convolution, pooling ----------------------------------------------------------
@autocast_policy("linear")
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T + bias, with `weight` of shape (out_features, in_features)."""
    x = as_tensor(input)
    if weight.ndim != 2 or (x.shape[-1] is not None and x.shape[-1] != weight.shape[1]):
        raise ShapeError(
            f"linear: input of shape {x.shape} does not fit a weight of shape {weight.shape} "
            f"(in_features {weight.shape[-1]})"
        )
    out = ops.matmul(x, weight.T)
    return out if bias is None else out + bias


def _check_4d(name: str, x: Tensor) -> None:
    if x.ndim != 4:
        raise ShapeError(f"{name}: expects an (N, C, H, W) input, got shape {x.shape}")


def _unsupported_window(name: str, dilation, groups: int = 1) -> None:
    dilation = tuple(dilation) if isinstance(dilation, (tuple, list)) else (dilation,)
    if any(d != 1 for d in dilation) or groups != 1:
        raise NotImplementedError(f"{name}: dilation and groups other than 1 are not supported "
                                  f"(got dilation={dilation}, groups={groups})")


@autocast_policy("conv2d")
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Size = 1,
           padding: Size = 0, dilation: Size = 1, groups: int = 1) -> Tensor:
    """2-d cross-correlation of (N, C, H, W) `input` with (O, C, kh, kw) `weight` (im2col +
    matmul); dilation and groups other than 1 are refused.

    Its gradients (input, weight, bias) come from unfold2d's, matmul's and reshape's rules.
    """
    _unsupported_window("conv2d", dilation, groups)
    x = as_tensor(input)
    _check_4d("conv2d", x)
    if weight.ndim != 4 or None not in (x.shape[1], weight.shape[1]) and \
            x.shape[1] != weight.shape[1]:
        raise ShapeError(
            f"conv2d: input of shape {x.shape} does not fit a weight of shape {weight.shape} "
            f"(the input's channels must equal the weight's dim 1)"
        )
    o, c, kh, kw = weight.shape
    if None in (c, kh, kw):
        raise ShapeError(f"conv2d: the weight's shape {weight.shape} must be known except "
                         f"dim 0 (the kernel size and channels fix the im2col layout)")
    _, stride, padding = window_arguments("conv2d", 1, stride, padding)
    if conv_op.takes_blocked(x, weight):
        out = conv_op.conv2d(x, weight, stride, padding)
        return out if bias is None else out + ops.reshape(bias, (1, o, 1, 1))
    cols = unfold2d(x, (kh, kw), stride, padding)  # (N, C, kh, kw, OH, OW)
    oh, ow = cols.shape[4], cols.shape[5]
    cols = ops.reshape(cols, (-1, c * kh * kw, oh * ow))
    known_o = -1 if o is None else o  # (the ONNX export recognises these exact reshapes)
    out = ops.matmul(ops.reshape(weight, (known_o, c * kh * kw)), cols)  # (N, O, OH*OW)
    out = _split_spatial(out, x, weight, oh, ow)
    if bias is not None:
        out = out + ops.reshape(bias, (1, known_o, 1, 1))
    return out


def _split_spatial(out: Tensor, x: Tensor, weight: Tensor, oh, ow) -> Tensor:
    """(N, O, OH*OW) -> (N, O, OH, OW); where both N and O are unknown, the shape is read at
    run time from a tensor of that shape (a reshape can leave only one size to infer)."""
    n, o = x.shape[0], weight.shape[0]
    if o is not None:
        return ops.reshape(out, (-1, o, oh, ow))
    if n is not None:
        return ops.reshape(out, (n, -1, oh, ow))
    like = (ops.zeros_like(x[:, :1, :1, :1])
            * ops.reshape(ops.zeros_like(weight[:, :1, :1, :1]), (1, -1, 1, 1))
            + np.zeros((1, 1, oh, ow), out.dtype))
    return ops.reshape_like(out, like)


def max_pool2d(input: Tensor, kernel_size: Size, stride: Size | None = None,
               padding: Size = 0, dilation: Size = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Largest value of each window (stride defaults to the kernel size). A `dilation`,
    `ceil_mode` or `return_indices` (each maximum's flat H*W index, as PyTorch's) other than the
    default goes through the n-d pooling of `max_pool2d_with_indices`."""
    x = as_tensor(input)
    _check_4d("max_pool2d", x)
    single = dilation in (1, (1, 1), [1, 1]) and not ceil_mode and not return_indices
    if single:  # the op-table pooling: one node, fused and exported as MaxPool
        return ops.pooling.max_pool2d(x, kernel_size, stride, padding)
    y, indices = _pooling_nd.max_pool2d_with_indices(x, kernel_size, stride, padding, dilation,
                                                     ceil_mode)
    return (y, indices) if return_indices else y


@autocast_policy("conv1d")
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int = 1,
           padding: int | str = 0, dilation: int = 1, groups: int = 1) -> Tensor:
    """1-d cross-correlation of (N, C, L) `input` with (O, C, k) `weight` (as a conv2d of height
    1)."""
    x = as_tensor(input)
    _single = lambda v: v[0] if isinstance(v, (tuple, list)) else v  # noqa: E731
    if _single(dilation) != 1 or groups != 1:
        raise NotImplementedError("conv1d: dilation and groups other than 1 are not supported")
    if padding == "valid":
        padding = 0
    elif isinstance(padding, str):
        raise NotImplementedError(f"conv1d: padding={padding!r} is not supported (give ints)")
    if x.ndim != 3 or weight.ndim != 3:
        raise ShapeError(f"conv1d: expects an (N, C, L) input and an (O, C, k) weight, got "
                         f"{x.shape} and {weight.shape}")
    _, (stride, _), (padding, _) = window_arguments("conv1d", 1, _single(stride),
                                                    _single(padding))
    out = conv2d(ops.unsqueeze(x, 2), ops.unsqueeze(weight, 2), bias, (1, stride),
                 (0, padding))
    return ops.squeeze(out, 2)


def _adaptive_matrix(n_in: int, n_out: int) -> np.ndarray:
    """(n_out, n_in) averaging rows over [floor(i*n_in/n_out), ceil((i+1)*n_in/n_out))."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        lo, hi = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a fixed (OH, OW) output (None keeps that dim), with PyTorch's windows."""
    x = as_tensor(input)
    if x.ndim not in (3, 4):
        raise ShapeError(f"adaptive_avg_pool2d: expects a 3-d or 4-d input, got {x.shape}")
    sizes = tuple(output_size) if isinstance(output_size, (tuple, list)) else \
        (output_size, output_size)
    h, w = x.shape[-2:]
    if h is None or w is None:
        raise ShapeError(f"adaptive_avg_pool2d: the spatial dims of {x.shape} must be known")
    oh, ow = (h if sizes[0] is None else int(sizes[0])), (w if sizes[1] is None else int(sizes[1]))
    if oh < 1 or ow < 1:
        raise ShapeError(f"adaptive_avg_pool2d: output size {output_size} must be positive")
    rows = constant_like(_adaptive_matrix(h, oh).astype(x.dtype), x)
    cols = constant_like(_adaptive_matrix(w, ow).T.astype(x.dtype), x)
    return ops.matmul(ops.matmul(rows, x), cols)


def avg_pool2d(input: Tensor, kernel_size: Size, stride: Size | None = None,
               padding: Size = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean of each window (stride defaults to the kernel size): the window's sum divided by its
    area with the zero padding (`count_include_pad`), by the input elements it covers
    (otherwise), or by `divisor_override`. `ceil_mode=True` is refused."""
    if ceil_mode:
        raise NotImplementedError("avg_pool2d: ceil_mode=True is not supported")
    x = as_tensor(input)
    _check_4d("avg_pool2d", x)
    kernel, stride, padding = window_arguments("avg_pool2d", kernel_size, stride, padding)
    windows = unfold2d(x, kernel, stride, padding)
    if divisor_override is None and (count_include_pad or padding == (0, 0)):
        return ops.mean(windows, dim=(2, 3))  # (the form ONNX export knows as AveragePool)
    sums = ops.sum(windows, dim=(2, 3))
    if divisor_override is not None:
        if int(divisor_override) <= 0:
            raise ValueError(f"avg_pool2d: divisor_override must be positive, got "
                             f"{divisor_override}")
        return sums / float(divisor_override)
    ones = ops.ones_like(x[:1, :1])
    covered = ops.sum(unfold2d(ones, kernel, stride, padding), dim=(2, 3))
    return sums / covered


# --- dropout, normalization, embedding -----------------------------------------------------
def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability `p` and scale the rest by 1/(1-p) (training only)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    x = as_tensor(input)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return _applied(x, "dropout", lambda t: t * 0.0, inplace)
    return _applied(x, "dropout", lambda t: t * dropout_mask(t, p), inplace)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of an (N, C, H, W) input with probability `p`, scaling the rest by
    1/(1-p) (training only). As PyTorch 2.x, with a warning: a 3-d input is read as (N, C, L)
    and a 2-d one is dropped element by element."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout2d: p must be in [0, 1], got {p}")
    x = as_tensor(input)
    if x.ndim not in (2, 3, 4):
        raise ShapeError(f"dropout2d: expects a 2-d to 4-d input, got shape {x.shape}")
    if x.ndim < 4:
        warnings.warn(f"dropout2d: a {x.ndim}-d input is treated as PyTorch 2.x does: "
                      + ("channel-wise over (N, C, L)" if x.ndim == 3 else "element-wise"),
                      UserWarning, stacklevel=2)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return _applied(x, "dropout2d", lambda t: t * 0.0, inplace)
    if x.ndim == 2:
        return _applied(x, "dropout2d", lambda t: t * dropout_mask(t, p), inplace)
    # one draw per (sample, channel), broadcast over the remaining dims
    mask = dropout_mask(x[..., :1, :1] if x.ndim == 4 else x[..., :1], p)
    return _applied(x, "dropout2d", lambda t: t * mask, inplace)


@autocast_policy("layer_norm")
def layer_norm(input: Tensor, normalized_shape: tuple[int, ...], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the last `len(normalized_shape)` dims, then scale and shift."""
    x = as_tensor(input)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if tuple(x.shape[x.ndim - k:]) != normalized_shape:
        raise ShapeError(
            f"layer_norm: input of shape {x.shape} does not end in normalized_shape "
            f"{normalized_shape}"
        )
    dims = tuple(range(x.ndim - k, x.ndim))
    mean = ops.mean(x, dims, keepdim=True)
    centered = x - mean
    var = ops.mean(centered * centered, dims, keepdim=True)
    out = centered / ops.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def batch_stats(x: Tensor) -> tuple[Tensor, Tensor, tuple]:
    """Per-channel (dim 1) mean and biased variance of `x`, and the dims reduced."""
    dims = (0,) + tuple(range(2, x.ndim))
    mean = ops.mean(x, dims, keepdim=True)
    centered = x - mean
    return mean, ops.mean(centered * centered, dims, keepdim=True), dims


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel (dim 1) by batch statistics (training) or the running ones.

    In training, given running statistics are updated in place as PyTorch does:
    ``running = (1 - momentum) * running + momentum * batch`` (the variance unbiased).
    """
    x = as_tensor(input)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if training or running_mean is None:
        mean, var, dims = batch_stats(x)
        if training and running_mean is not None:
            update_running_stats(x, mean, var, dims, running_mean, running_var, momentum)
    else:
        mean, var = ops.reshape(running_mean, shape), ops.reshape(running_var, shape)
    out = (x - mean) / ops.sqrt(var + eps)
    if weight is not None:
        out = out * ops.reshape(weight, shape)
    if bias is not None:
        out = out + ops.reshape(bias, shape)
    return out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 rows of the identity picked by integer labels: shape `tensor.shape + (C,)`, C
    `num_classes`, or with -1 the largest label + 1 (read from an eager tensor), as PyTorch."""
    labels = as_tensor(tensor)
    if labels.dtype.kind not in "iu":
        raise DTypeError(f"one_hot: expects an integer tensor of class labels, got "
                         f"{labels.dtype}")
    if num_classes == -1:
        if labels._node is not None:
            raise ShapeError("one_hot: num_classes=-1 needs an eager tensor (give num_classes "
                             "in a graph)")
        if labels._data.size == 0:
            raise ShapeError("one_hot: can not infer the number of classes from an empty tensor")
        num_classes = int(labels._data.max()) + 1
    return ops.one_hot(labels, num_classes, dtypes.int64)


def update_running_stats(x: Tensor, mean: Tensor, var: Tensor, dims: tuple,
                         running_mean: Tensor, running_var: Tensor, momentum: float) -> None:
    """running <- (1 - momentum) * running + momentum * batch, the variance unbiased."""
    mean, var = mean.detach(), var.detach()
    n = ops.count(x, dims, x.dtype)
    var = var * n / ops.maximum(n - 1.0, 1.0)
    channels = (running_mean.shape[0],)
    update_buffer(running_mean,
                  running_mean * (1.0 - momentum) + ops.reshape(mean, channels) * momentum)
    if running_var is not None:
        update_buffer(running_var,
                      running_var * (1.0 - momentum) + ops.reshape(var, channels) * momentum)


from .attention_forward import multi_head_attention_forward  # noqa: E402
from .attention_functional import scaled_dot_product_attention  # noqa: E402
from .conv_transpose import conv_transpose1d, conv_transpose2d, fold, unfold  # noqa: E402
from .distance import cosine_similarity, pairwise_distance  # noqa: E402
from .embedding_bag import embedding_bag  # noqa: E402
from .embedding_functional import embedding  # noqa: E402
from .group_norm import group_norm, instance_norm  # noqa: E402
from .losses_regression import (  # noqa: E402
    cosine_embedding_loss,
    huber_loss,
    kl_div,
    smooth_l1_loss,
)
from .pixel_shuffle import pixel_shuffle, pixel_unshuffle  # noqa: E402
from .pooling1d import avg_pool1d, max_pool1d  # noqa: E402

__all__ += ["conv_transpose1d", "conv_transpose2d", "fold", "unfold", "cosine_similarity",
            "pairwise_distance", "embedding_bag", "group_norm", "instance_norm",
            "cosine_embedding_loss", "huber_loss", "kl_div", "smooth_l1_loss", "pixel_shuffle",
            "pixel_unshuffle", "avg_pool1d", "max_pool1d"]

from . import functional_activation as _activation  # noqa: E402
from . import functional_dropout as _dropout  # noqa: E402
from .functional_activation import *  # noqa: E402, F403  (its __all__, published here)
from .functional_dropout import *  # noqa: E402, F403  (its __all__, published here)

__all__ += _activation.__all__ + _dropout.__all__

from . import losses_margin as _margin  # noqa: E402
from .losses_margin import *  # noqa: E402, F403  (its __all__, published here)

__all__ += _margin.__all__

from . import layers_more as _layers_more  # noqa: E402
from .layers_more import *  # noqa: E402, F403  (its __all__, published here)

__all__ += _layers_more.__all__

from . import pooling_nd as _pooling_nd  # noqa: E402
from .pooling_nd import *  # noqa: E402, F403  (its __all__, published here)

__all__ += _pooling_nd.__all__
