"""`pixel_shuffle` / `pixel_unshuffle` (sub-pixel convolution's rearrangement) and their
layers: a reshape, a permute and a reshape, so they differentiate and trace as those ops."""

from __future__ import annotations

from .. import ops
from ..errors import ShapeError
from ..ops.convert import as_tensor
from ..tensor import Tensor
from .module import Module


def _known(name: str, x: Tensor) -> tuple:
    if x.ndim < 3 or any(d is None for d in x.shape[-3:]):
        raise ShapeError(f"{name}: expects (*, C, H, W) with C, H, W known, got {x.shape}")
    return tuple(x.shape[-3:])


def _lead(x: Tensor) -> tuple:
    """The batch dims before (C, H, W), the first one left for the reshape to infer."""
    lead = tuple(x.shape[:-3])
    return ((-1,) + lead[1:]) if lead else ()


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r), with r = `upscale_factor`."""
    x, r = as_tensor(input), int(upscale_factor)
    c, h, w = _known("pixel_shuffle", x)
    if r < 1 or c % (r * r):
        raise ShapeError(f"pixel_shuffle: channels {c} must be divisible by upscale_factor^2 "
                         f"({r}^2)")
    y = ops.reshape(x, (-1, c // (r * r), r, r, h, w))
    y = ops.permute(y, (0, 1, 4, 2, 5, 3))
    return ops.reshape(y, _lead(x) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), the inverse of `pixel_shuffle`."""
    x, r = as_tensor(input), int(downscale_factor)
    c, h, w = _known("pixel_unshuffle", x)
    if r < 1 or h % r or w % r:
        raise ShapeError(f"pixel_unshuffle: height {h} and width {w} must be divisible by "
                         f"downscale_factor {r}")
    y = ops.reshape(x, (-1, c, h // r, r, w // r, r))
    y = ops.permute(y, (0, 1, 3, 5, 2, 4))
    return ops.reshape(y, _lead(x) + (c * r * r, h // r, w // r))


class PixelShuffle(Module):
    """`pixel_shuffle` as a layer."""

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = int(upscale_factor)

    def forward(self, x: Tensor) -> Tensor:
        return pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """`pixel_unshuffle` as a layer."""

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = int(downscale_factor)

    def forward(self, x: Tensor) -> Tensor:
        return pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
