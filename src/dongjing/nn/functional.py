"""`dj.nn.functional` (import as F): layers as functions, composed of dongjing ops.

Activations, linear, convolution and pooling, dropout, normalization, embedding; the losses
live in `losses.py` and are re-exported here.
"""

from __future__ import annotations

import math

from .. import ops
from ..errors import ShapeError
from ..ops import erf, one_hot, relu, sigmoid, tanh, unfold2d
from ..ops.convert import as_tensor
from ..ops.nn import dropout_mask
from ..tensor import Tensor
from .losses import (
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
)

Size = int | tuple[int, int]  # a kernel size, stride or padding: one int, or (height, width)

__all__ = [
    "relu", "tanh", "sigmoid", "gelu", "softmax", "log_softmax", "linear", "conv2d",
    "max_pool2d", "avg_pool2d", "dropout", "embedding", "layer_norm", "batch_norm", "one_hot",
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy_with_logits",
]


# --- activations ---------------------------------------------------------------------------
def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), exact (erf) or with PyTorch's tanh approximation (`approximate="tanh"`)."""
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * (tanh(inner) + 1.0) * 0.5
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return x * (erf(x * (1.0 / math.sqrt(2.0))) + 1.0) * 0.5


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`."""
    return ops.softmax(x, dim)


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    """log(softmax(x)) along `dim`, computed stably."""
    return ops.log_softmax(x, dim)


# --- linear, convolution, pooling ----------------------------------------------------------
def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T + bias, with `weight` of shape (out_features, in_features)."""
    x = as_tensor(x)
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


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Size = 1,
           padding: Size = 0) -> Tensor:
    """2-d cross-correlation of (N, C, H, W) `x` with (O, C, kh, kw) `weight` (im2col + matmul).

    Its gradients (input, weight, bias) come from unfold2d's, matmul's and reshape's rules.
    """
    x = as_tensor(x)
    _check_4d("conv2d", x)
    if weight.ndim != 4 or (x.shape[1] is not None and x.shape[1] != weight.shape[1]):
        raise ShapeError(
            f"conv2d: input of shape {x.shape} does not fit a weight of shape {weight.shape} "
            f"(the input's channels must equal the weight's dim 1)"
        )
    o, c, kh, kw = weight.shape
    cols = unfold2d(x, (kh, kw), stride, padding)  # (N, C, kh, kw, OH, OW)
    oh, ow = cols.shape[4], cols.shape[5]
    cols = ops.reshape(cols, (-1, c * kh * kw, oh * ow))
    out = ops.matmul(ops.reshape(weight, (o, c * kh * kw)), cols)  # (N, O, OH*OW)
    out = ops.reshape(out, (-1, o, oh, ow))
    if bias is not None:
        out = out + ops.reshape(bias, (1, o, 1, 1))
    return out


def max_pool2d(x: Tensor, kernel_size: Size, stride: Size | None = None,
               padding: Size = 0) -> Tensor:
    """Largest value of each window (stride defaults to the kernel size)."""
    x = as_tensor(x)
    _check_4d("max_pool2d", x)
    stride = kernel_size if stride is None else stride
    windows = unfold2d(x, kernel_size, stride, padding, pad_value=-math.inf)
    return ops.amax(windows, dim=(2, 3))


def avg_pool2d(x: Tensor, kernel_size: Size, stride: Size | None = None,
               padding: Size = 0) -> Tensor:
    """Mean of each window, zero padding included (stride defaults to the kernel size)."""
    x = as_tensor(x)
    _check_4d("avg_pool2d", x)
    stride = kernel_size if stride is None else stride
    return ops.mean(unfold2d(x, kernel_size, stride, padding), dim=(2, 3))


# --- dropout, normalization, embedding -----------------------------------------------------
def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero each element with probability `p` and scale the rest by 1/(1-p) (training only)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    x = as_tensor(x)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    return x * dropout_mask(x, p)


def layer_norm(x: Tensor, normalized_shape: tuple[int, ...], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the last `len(normalized_shape)` dims, then scale and shift."""
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


def batch_norm(x: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, eps: float = 1e-5) -> Tensor:
    """Normalize each channel (dim 1) by batch statistics (training) or the running ones.

    This function does not update the running statistics; `nn.BatchNorm*d` does.
    """
    x = as_tensor(x)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if training or running_mean is None:
        mean, var, _ = batch_stats(x)
    else:
        mean, var = ops.reshape(running_mean, shape), ops.reshape(running_var, shape)
    out = (x - mean) / ops.sqrt(var + eps)
    if weight is not None:
        out = out * ops.reshape(weight, shape)
    if bias is not None:
        out = out + ops.reshape(bias, shape)
    return out


def embedding(indices: Tensor, weight: Tensor) -> Tensor:
    """Rows of `weight` picked by integer `indices` (a gather; its gradient scatter-adds)."""
    return weight[as_tensor(indices)]
