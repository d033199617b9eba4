"""The layer functions PyTorch also publishes in `torch.*` (`torch.conv2d`, `torch.dropout`,
`torch.batch_norm`, `torch.lstm_cell`, ...) and its matrix functions there (`torch.inverse`,
`torch.det`, ...), with `torch.*`'s own parameter lists (which differ from `F.*`'s: positional
`train` flags, integer reductions), over `dj.nn.functional` and `dj.linalg`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import linalg, ops
from ..core.torch_args import dim_aliases
from ..errors import ArgumentError, ShapeError
from ..ops.convert import as_tensor
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out
from ..tensor.transfer import constant_like
from . import functional as F

if TYPE_CHECKING:
    from ..types import TensorLike

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum", "none": "none", "mean": "mean", "sum": "sum"}


def _reduction(name, value) -> str:
    if value not in _REDUCTIONS:
        raise ArgumentError(f"{name}: reduction must be 'none', 'mean', 'sum' or 0, 1, 2; got "
                            f"{value!r}")
    return _REDUCTIONS[value]


def adaptive_avg_pool1d(input, output_size):
    return F.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(inputs, output_size):
    """`F.adaptive_max_pool1d` with its indices, as `torch.adaptive_max_pool1d` returns."""
    return F.adaptive_max_pool1d(inputs, output_size, True)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    return F.avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    return F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            return_indices=False, ceil_mode=False):
    return F.max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    return F.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return F.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return F.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    return F.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    """Batch normalization; in training with running statistics they are updated in place by
    `momentum` (by `F.batch_norm`), as PyTorch's."""
    return F.batch_norm(as_tensor(input), running_mean, running_var, weight, bias, training,
                        momentum=momentum, eps=eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return F.layer_norm(input, tuple(normalized_shape), weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return F.group_norm(input, num_groups, weight, bias, eps)


def instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum,
                  eps, cudnn_enabled):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` at the integer `indices` (`torch.embedding` takes the weight first);
    the `padding_idx` row (when >= 0) gets no gradient."""
    if scale_grad_by_freq:
        raise ArgumentError("embedding: scale_grad_by_freq=True is not supported")
    out = F.embedding(indices, weight)
    if padding_idx is not None and padding_idx >= 0:
        keep = ops.ne(as_tensor(indices), padding_idx)
        out = ops.where(ops.unsqueeze(keep, -1), out, out.detach())
    return out


def embedding_bag(input, weight, offsets, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, padding_idx=None):
    return F.embedding_bag(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq,
                           mode, sparse, per_sample_weights, False, padding_idx)


def dropout(input, p, train, inplace=False):
    return F.dropout(input, p, train, inplace)


def alpha_dropout(input, p, train, inplace=False):
    return F.alpha_dropout(input, p, train, inplace)


def feature_alpha_dropout(input, p, train):
    return F.feature_alpha_dropout(input, p, train)


def feature_dropout(input, p, train):
    """Channel dropout of an (N, C, *) input."""
    x = as_tensor(input)
    if x.ndim < 2:
        raise ShapeError(f"feature_dropout: expects (N, C, ...), got shape {x.shape}")
    if not train or p == 0:
        return x
    if p == 1:
        return x * 0.0
    mask = ops.dropout_mask(x[(slice(None), slice(None)) + (slice(0, 1),) * (x.ndim - 2)], p)
    return x * mask


def bilinear(input1, input2, weight, bias=None):
    return F.bilinear(input1, input2, weight, bias)


def celu(input, alpha=1.0, inplace=False):
    return F.celu(input, alpha, inplace)


def selu(input, inplace=False):
    return F.selu(input, inplace)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    return F.rrelu(input, lower, upper, training, inplace)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    return F.prelu(input, weight)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    return F.hardshrink(input, lambd)


def threshold(input, threshold, value, inplace=False):
    return F.threshold(input, threshold, value, inplace)


def pixel_shuffle(input, upscale_factor):
    return F.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    return F.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input, groups):
    return F.channel_shuffle(input, groups)


native_channel_shuffle = channel_shuffle


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input, p=2):
    """The p-norm distances between the rows of an (N, M) input, the upper triangle flat."""
    x = as_tensor(input)
    if x.ndim != 2:
        raise ShapeError(f"pdist: expects a 2-d input, got shape {x.shape}")
    n = x.shape[0]
    rows = [i for i in range(n) for _ in range(i + 1, n)]
    cols = [j for i in range(n) for j in range(i + 1, n)]
    if not rows:
        return ops.reshape(x[:0, 0], (0,))
    a = ops.index_select(x, 0, as_tensor(rows))
    b = ops.index_select(x, 0, as_tensor(cols))
    return F.pairwise_distance(a, b, p, 0.0)


# The torch.* losses take an integer `reduction` (0 none, 1 mean, 2 sum); called without one,
# PyTorch 2.13's torch.* forms return the unreduced losses, and so do these.
def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction("cosine_embedding_loss", reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return F.hinge_embedding_loss(input, target, margin,
                                  reduction=_reduction("hinge_embedding_loss", reduction))


def kl_div(input: TensorLike, target: TensorLike, reduction: int = 0, *,
           log_target: bool = False) -> Tensor:
    """`torch.kl_div`, the native form: an integer `reduction` (0 none, 1 mean, 2 sum)."""
    return F.kl_div(input, target, reduction=_reduction("kl_div", reduction),
                    log_target=log_target)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction("margin_ranking_loss", reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction("poisson_nll_loss", reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        reduction=0):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction("triplet_margin_loss", reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
                                     reduction=0):
    return F.binary_cross_entropy_with_logits(
        input, target, weight,
        reduction=_reduction("binary_cross_entropy_with_logits", reduction),
        pos_weight=pos_weight)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return F.rms_norm(input, normalized_shape, weight, eps)


def _cell_inputs(input, hx, w_ih, w_hh, b_ih, b_hh):
    gates = F.linear(input, w_ih, b_ih) + F.linear(hx, w_hh, b_hh)
    return gates


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step: tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return ops.tanh(_cell_inputs(input, hx, w_ih, w_hh, b_ih, b_hh))


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step with a ReLU."""
    return ops.relu(_cell_inputs(input, hx, w_ih, w_hh, b_ih, b_hh))


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: `hx` = (h, c); returns (h', c') (gates in PyTorch's order i, f, g, o)."""
    h, c = hx
    i, f, g, o = ops.chunk(_cell_inputs(input, h, w_ih, w_hh, b_ih, b_hh), 4, -1)
    c2 = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
    return ops.sigmoid(o) * ops.tanh(c2), c2


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step (gates in PyTorch's order r, z, n)."""
    xr, xz, xn = ops.chunk(F.linear(input, w_ih, b_ih), 3, -1)
    hr, hz, hn = ops.chunk(F.linear(hx, w_hh, b_hh), 3, -1)
    r, z = ops.sigmoid(xr + hr), ops.sigmoid(xz + hz)
    n = ops.tanh(xn + r * hn)
    return (1.0 - z) * n + z * hx


# --- matrix functions under torch.*'s names ----------------------------------------------------
@accepts_out
def inverse(input: TensorLike) -> Tensor:
    """The inverse of a square matrix (or a batch): `dj.linalg.inv`."""
    return linalg.inv(input)


def det(input: TensorLike) -> Tensor:
    return linalg.det(input)


def logdet(input: TensorLike) -> Tensor:
    """log(det(input)): NaN for a negative determinant, -inf for a singular matrix."""
    sign, logabs = linalg.slogdet(input)
    nan = ops.full_like(logabs, float("nan"))
    return ops.where(ops.lt(sign, 0.0), nan, ops.where(ops.eq(sign, 0.0),
                                                        ops.full_like(logabs, float("-inf")),
                                                        logabs))


def slogdet(input: TensorLike) -> tuple[Tensor, Tensor]:
    return linalg.slogdet(input)


@accepts_out
def cholesky(input: TensorLike, upper: bool = False) -> Tensor:
    return linalg.cholesky(input, upper=upper)


@accepts_out
def qr(input: TensorLike, some: bool = True) -> tuple[Tensor, Tensor]:
    return linalg.qr(input, "reduced" if some else "complete")


@accepts_out
def svd(input: TensorLike, some: bool = True, compute_uv: bool = True
        ) -> tuple[Tensor, Tensor, Tensor]:
    """U, S, V (V, not V^H, as `torch.svd` returns); `some=False` gives the full U and V."""
    u, s, vh = linalg.svd(input, full_matrices=not some)
    v = ops.transpose(vh, -2, -1)
    if not compute_uv:  # PyTorch returns zero-filled U and V then
        return ops.zeros_like(u).detach(), s, ops.zeros_like(v).detach()
    return u, s, v


def pinverse(input: TensorLike, rcond: float = 1e-15) -> Tensor:
    return linalg.pinv(input, rtol=rcond)


@accepts_out
def matrix_power(input: TensorLike, n: int) -> Tensor:
    """A square matrix (or batch) to the integer power `n` (negative: of the inverse), by
    repeated squaring."""
    x = as_tensor(input)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"matrix_power: expects square matrices, got shape {x.shape}")
    k = abs(int(n))
    if k == 0:
        eye = np.broadcast_to(np.eye(x.shape[-1], dtype=x.dtype), tuple(x.shape))
        return constant_like(eye.copy(), x) + ops.zeros_like(x)
    result, power = None, x if n > 0 else linalg.inv(x)
    while k:
        if k & 1:
            result = power if result is None else ops.matmul(result, power)
        k >>= 1
        if k:
            power = ops.matmul(power, power)
    return result


@accepts_out
@dim_aliases
def frobenius_norm(input, dim=None, keepdim=False):
    """sqrt of the sum of squares (over `dim`, all dims when None)."""
    x = as_tensor(input)
    return ops.sqrt(ops.sum(x * x, dim, keepdim))


_METHODS = ("det", "logdet", "slogdet", "inverse", "pinverse", "cholesky", "qr", "svd",
            "hardshrink", "prelu", "matrix_power")


def _attach_methods() -> None:
    """These functions live above the Tensor type, so they attach their methods here."""
    for name in _METHODS:
        setattr(Tensor, name, globals()[name])


_attach_methods()

__all__ = [n for n in dict(globals()) if not n.startswith("_") and callable(globals()[n])
           and getattr(globals()[n], "__module__", "") == __name__]
