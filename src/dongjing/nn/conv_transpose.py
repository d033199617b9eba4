"""Transposed convolution (`conv_transpose1d/2d`, `nn.ConvTranspose1d/2d`) and PyTorch's
sliding-window functions `F.unfold` / `F.fold` (`nn.Unfold` / `nn.Fold`).

All of them are built on the op table's `unfold2d` and `fold2d` (im2col and its adjoint) with
matmul and reshapes, so their gradients, static graphs and `dj.jit` come from those ops. A
dilated kernel is the kernel with `dilation - 1` zeros between its taps."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import ops
from ..autocasting import autocast_policy
from ..core.validation import check_int
from ..errors import ShapeError
from ..ops import fold2d, unfold2d
from ..ops.convert import as_tensor
from ..tensor import Tensor
from . import init
from .factory import place_new
from .module import Module
from .parameter import Parameter

if TYPE_CHECKING:
    from ..types import DeviceLike, DTypeLike


def _pair(v, name: str, what: str, minimum: int = 0) -> tuple[int, int]:
    pair = tuple(v) if isinstance(v, (tuple, list)) else (v, v)
    if len(pair) != 2:
        raise ValueError(f"{what}: argument '{name}' must be an int or a pair, got {v!r}")
    return tuple(check_int(what, name, d, minimum) for d in pair)


def _spread(t: Tensor, dim: int, step: int) -> Tensor:
    """`t` with `step - 1` zeros after each entry along `dim`, the trailing ones cut: the taps
    of a kernel dilated by `step`."""
    if step == 1:
        return t
    n = t.shape[dim]
    parts = [t] + [ops.zeros_like(t)] * (step - 1)
    woven = ops.flatten(ops.stack(parts, dim + 1), dim, dim + 1)
    index = (slice(None),) * dim + (slice(0, (n - 1) * step + 1),)
    return woven[index]


def _span(kernel: tuple, dilation: tuple) -> tuple:
    return tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))


# --- unfold / fold ----------------------------------------------------------------------------
def unfold(input: Tensor, kernel_size: int | tuple[int, int], dilation: int | tuple[int, int] = 1,
           padding: int | tuple[int, int] = 0, stride: int | tuple[int, int] = 1) -> Tensor:
    """Sliding blocks of an (N, C, H, W) input as columns: (N, C * kh * kw, L), L the number
    of block positions (PyTorch's im2col layout)."""
    x = as_tensor(input)
    if x.ndim != 4:
        raise ShapeError(f"unfold: expects an (N, C, H, W) input, got shape {x.shape}")
    kernel = _pair(kernel_size, "kernel_size", "F.unfold", 1)
    dil = _pair(dilation, "dilation", "F.unfold", 1)
    cols = unfold2d(x, _span(kernel, dil), _pair(stride, "stride", "F.unfold", 1),
                    _pair(padding, "padding", "F.unfold"))  # (N, C, sh, sw, OH, OW)
    if dil != (1, 1):
        cols = cols[:, :, ::dil[0], ::dil[1]]
    n, c = x.shape[0], x.shape[1]
    return ops.reshape(cols, (-1 if n is None else n, c * kernel[0] * kernel[1],
                              cols.shape[4] * cols.shape[5]))


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """The adjoint of `unfold`: (N, C * kh * kw, L) columns summed into (N, C, H, W) blocks,
    with (H, W) = `output_size` (overlapping positions add up)."""
    cols = as_tensor(input)
    size = _pair(output_size, "output_size", "F.fold", 1)
    kernel = _pair(kernel_size, "kernel_size", "F.fold", 1)
    dil = _pair(dilation, "dilation", "F.fold", 1)
    step = _pair(stride, "stride", "F.fold", 1)
    pad = _pair(padding, "padding", "F.fold")
    span = _span(kernel, dil)
    blocks = [(s + 2 * p - k) // st + 1 for s, p, k, st in zip(size, pad, span, step)]
    if cols.ndim not in (2, 3) or cols.shape[-2] is None or cols.shape[-2] % (kernel[0] *
                                                                              kernel[1]):
        raise ShapeError(f"fold: expects (N, C * {kernel[0]} * {kernel[1]}, L) columns, got "
                         f"shape {cols.shape}")
    if cols.shape[-1] is not None and cols.shape[-1] != blocks[0] * blocks[1]:
        raise ShapeError(f"fold: {cols.shape[-1]} blocks given, but output_size {size} with "
                         f"kernel {kernel}, dilation {dil}, padding {pad} and stride {step} "
                         f"has {blocks[0]} x {blocks[1]}")
    batched = cols.ndim == 3
    if not batched:
        cols = ops.unsqueeze(cols, 0)
    c = cols.shape[1] // (kernel[0] * kernel[1])
    cols = ops.reshape(cols, (-1, c, kernel[0], kernel[1], blocks[0], blocks[1]))
    cols = _spread(_spread(cols, 2, dil[0]), 3, dil[1])
    out = fold2d(cols, size, span, step, pad)
    return out if batched else ops.squeeze(out, 0)


# --- transposed convolution -------------------------------------------------------------------
@autocast_policy("conv_transpose2d")
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The gradient of conv2d with respect to its input, as a layer: (N, C_in, H, W) with a
    (C_in, C_out / groups, kh, kw) weight gives (N, C_out, H_out, W_out), H_out = (H - 1) *
    stride - 2 * padding + dilation * (kh - 1) + output_padding + 1."""
    x = as_tensor(input)
    what = "conv_transpose2d"
    if x.ndim != 4 or weight.ndim != 4:
        raise ShapeError(f"{what}: expects an (N, C, H, W) input and a 4-d weight, got "
                         f"{x.shape} and {weight.shape}")
    c_in, c_per_group, kh, kw = weight.shape
    h, w = x.shape[2], x.shape[3]
    if None in (c_in, c_per_group, kh, kw, h, w):
        raise ShapeError(f"{what}: the weight's shape and the input's spatial dims must be "
                         f"known, got {weight.shape} and {x.shape}")
    if x.shape[1] is not None and x.shape[1] != c_in:
        raise ShapeError(f"{what}: input of shape {x.shape} has {x.shape[1]} channels, the "
                         f"weight {weight.shape} expects {c_in}")
    if c_in % groups:
        raise ShapeError(f"{what}: in_channels {c_in} must be divisible by groups {groups}")
    step = _pair(stride, "stride", what, 1)
    pad = _pair(padding, "padding", what)
    extra = _pair(output_padding, "output_padding", what)
    dil = _pair(dilation, "dilation", what, 1)
    if any(e >= max(s, d) for e, s, d in zip(extra, step, dil)):
        raise ValueError(f"{what}: output_padding {extra} must be smaller than stride {step} "
                         f"or dilation {dil}")
    span = _span((kh, kw), dil)
    size = tuple((n - 1) * s - 2 * p + k + e for n, s, p, k, e in
                 zip((h, w), step, pad, span, extra))
    if min(size) < 1:
        raise ShapeError(f"{what}: the output size {size} is not positive")
    per_in = c_in // groups
    outs = []
    for g in range(groups):
        xg = x[:, g * per_in:(g + 1) * per_in] if groups > 1 else x
        wg = weight[g * per_in:(g + 1) * per_in] if groups > 1 else weight
        flat = ops.reshape(xg, (-1, per_in, h * w))
        cols = ops.matmul(ops.transpose(ops.reshape(wg, (per_in, c_per_group * kh * kw)), 0, 1),
                          flat)  # (N, C_out/g * kh * kw, H * W)
        cols = ops.reshape(cols, (-1, c_per_group, kh, kw, h, w))
        cols = _spread(_spread(cols, 2, dil[0]), 3, dil[1])
        outs.append(fold2d(cols, size, span, step, pad))
    out = outs[0] if groups == 1 else ops.concat(outs, 1)
    if bias is not None:
        out = out + ops.reshape(bias, (1, -1, 1, 1))
    return out


@autocast_policy("conv_transpose1d")
def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """`conv_transpose2d` on (N, C, L) inputs with a (C_in, C_out / groups, k) weight."""
    x = as_tensor(input)
    if x.ndim != 3 or weight.ndim != 3:
        raise ShapeError(f"conv_transpose1d: expects an (N, C, L) input and a 3-d weight, got "
                         f"{x.shape} and {weight.shape}")
    one = lambda v: int(v[0]) if isinstance(v, (tuple, list)) else int(v)  # noqa: E731
    out = conv_transpose2d(ops.unsqueeze(x, 2), ops.unsqueeze(weight, 2), bias,
                           (1, one(stride)), (0, one(padding)), (0, one(output_padding)),
                           groups, (1, one(dilation)))
    return ops.squeeze(out, 2)


class _ConvTransposeNd(Module):
    _dims = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | Sequence[int],
                 stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                 output_padding: int | Sequence[int] = 0, groups: int = 1, bias: bool = True,
                 dilation: int | Sequence[int] = 1,
                 padding_mode: str = "zeros", device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        super().__init__()
        name = f"nn.{type(self).__name__}"
        if padding_mode != "zeros":
            raise ValueError(f"{name}: only padding_mode='zeros' is supported (as in PyTorch)")
        self.in_channels = check_int(name, "in_channels", in_channels, 1)
        self.out_channels = check_int(name, "out_channels", out_channels, 1)
        self.groups = check_int(name, "groups", groups, 1)
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels and out_channels must be divisible by "
                             f"groups {groups}")
        n = self._dims

        def tup(v, label, minimum=0):
            t = tuple(v) if isinstance(v, (tuple, list)) else (v,) * n
            if len(t) != n:
                raise ValueError(f"{name}: argument '{label}' must be an int or {n} ints")
            return tuple(check_int(name, label, d, minimum) for d in t)

        self.kernel_size, self.stride = tup(kernel_size, "kernel_size", 1), tup(stride, "stride", 1)
        self.padding, self.output_padding = tup(padding, "padding"), tup(output_padding,
                                                                         "output_padding")
        self.dilation = tup(dilation, "dilation", 1)
        shape = (in_channels, out_channels // groups) + self.kernel_size
        self.weight = Parameter(np.empty(shape, np.float32))
        if bias:
            self.bias = Parameter(np.empty((out_channels,), np.float32))
        else:
            self.register_parameter("bias", None)
        # PyTorch's default: kaiming_uniform(a=sqrt(5)) over fan-in = weight.size(1) * kernel
        bound = 1.0 / math.sqrt(shape[1] * math.prod(self.kernel_size))
        init.uniform_(self.weight, -bound, bound)
        if bias:
            init.uniform_(self.bias, -bound, bound)
        place_new(self, device, dtype)

    def forward(self, x: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        extra = self._output_padding(x, output_size)
        fn = conv_transpose2d if self._dims == 2 else conv_transpose1d
        return fn(x, self.weight, self.bias, self.stride, self.padding, extra, self.groups,
                  self.dilation)

    def _output_padding(self, x: Tensor, output_size) -> tuple:
        """The output padding that gives `output_size` (PyTorch's forward argument)."""
        if output_size is None:
            return self.output_padding
        want = tuple(output_size)[-self._dims:]
        spatial = x.shape[-self._dims:]
        extra = []
        for n, s, p, k, d, target in zip(spatial, self.stride, self.padding, self.kernel_size,
                                          self.dilation, want):
            smallest = (n - 1) * s - 2 * p + d * (k - 1) + 1
            if not smallest <= target < smallest + s:
                raise ValueError(f"nn.{type(self).__name__}: output_size {tuple(output_size)} "
                                 f"is not reachable (sizes {smallest} to {smallest + s - 1})")
            extra.append(target - smallest)
        return tuple(extra)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-d convolution: weight (in_channels, out_channels / groups, kh, kw)."""

    _dims = 2


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-d convolution: weight (in_channels, out_channels / groups, k)."""

    _dims = 1


class Unfold(Module):
    """`F.unfold` as a layer."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, x: Tensor) -> Tensor:
        return unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)


class Fold(Module):
    """`F.fold` as a layer."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, x: Tensor) -> Tensor:
        return fold(x, self.output_size, self.kernel_size, self.dilation, self.padding,
                    self.stride)
