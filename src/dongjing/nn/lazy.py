"""PyTorch's lazy layers (`LazyLinear`, `LazyConv1d/2d`, `LazyConvTranspose1d/2d`,
`LazyBatchNorm1d/2d/3d`, `LazyInstanceNorm1d/2d/3d`): the input size is read off the first
input, then the layer becomes its ordinary class (`cls_to_become`), as PyTorch's do. Until
then the layer has no parameters: run one batch through it before building the optimizer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ArgumentError, ShapeError
from ..tensor import Tensor
from .conv import Conv1d, Conv2d
from .conv_transpose import ConvTranspose1d, ConvTranspose2d
from .group_norm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d

if TYPE_CHECKING:
    from ..types import DeviceLike, DTypeLike


class LazyModuleMixin:
    """Build the layer on its first call, then turn into `cls_to_become`."""

    cls_to_become: type | None = None
    _feature_dim = 1  # the dim of a batched input holding the size to infer
    _batched_ndim = 2  # the number of dims of a batched input (unbatched: one fewer)

    def has_uninitialized_params(self) -> bool:
        return type(self) is not self.cls_to_become

    def _inferred_size(self, x: Tensor) -> int:
        dim = self._feature_dim if x.ndim >= self._batched_ndim else self._feature_dim - 1
        size = x.shape[dim] if dim < x.ndim else None
        if size is None:
            raise ShapeError(f"{type(self).__name__}: cannot infer the input size from an input "
                             f"of shape {x.shape}")
        return int(size)

    def initialize_parameters(self, input: Tensor) -> None:
        """Build the parameters for `input` and become the ordinary layer."""
        size = self._inferred_size(input)
        training = self.training
        args, kwargs = self._lazy_arguments
        target = self.cls_to_become
        object.__setattr__(self, "__class__", target)  # first: its __init__ calls super()
        target.__init__(self, size, *args, **kwargs)
        self.train(training)

    def forward(self, input: Tensor, *args: Any, **kwargs: Any) -> Any:
        self.initialize_parameters(input)
        return self.forward(input, *args, **kwargs)  # the ordinary layer's, now

    def extra_repr(self) -> str:
        args, kwargs = self._lazy_arguments
        return ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])


class LazyLinear(LazyModuleMixin, Module):
    """`Linear` whose `in_features` is the last dim of its first input."""

    cls_to_become = Linear
    _feature_dim = -1

    def __init__(self, out_features: int, bias: bool = True, device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        Module.__init__(self)
        object.__setattr__(self, "_lazy_arguments",
                           ((out_features, bias), {"device": device, "dtype": dtype}))

    def _inferred_size(self, x: Tensor) -> int:
        if x.ndim == 0 or x.shape[-1] is None:
            raise ShapeError(f"LazyLinear: cannot infer in_features from an input of shape "
                             f"{x.shape}")
        return int(x.shape[-1])


def _conv_arguments(name, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                    padding_mode, device, dtype, two_d: bool):
    if two_d and (dilation not in (1, (1, 1)) or groups != 1 or padding_mode != "zeros"):
        raise ArgumentError(f"{name}: dilation, groups and padding_mode other than their "
                            f"defaults are not supported (as in nn.Conv2d)")
    if two_d:  # (nn.Conv2d takes dilation and groups before bias, as PyTorch's)
        return (out_channels, kernel_size, stride, padding), dict(bias=bias, device=device,
                                                                   dtype=dtype)
    return (out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode), \
        dict(device=device, dtype=dtype)


class LazyConv1d(LazyModuleMixin, Module):
    """`Conv1d` whose `in_channels` is read off its first (N, C, L) or (C, L) input."""

    cls_to_become = Conv1d
    _batched_ndim = 3

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        Module.__init__(self)
        object.__setattr__(self, "_lazy_arguments", _conv_arguments(
            "LazyConv1d", out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode, device, dtype, False))


class LazyConv2d(LazyModuleMixin, Module):
    """`Conv2d` whose `in_channels` is read off its first (N, C, H, W) or (C, H, W) input."""

    cls_to_become = Conv2d
    _batched_ndim = 4

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None):
        Module.__init__(self)
        object.__setattr__(self, "_lazy_arguments", _conv_arguments(
            "LazyConv2d", out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode, device, dtype, True))


class _LazyConvTranspose(LazyModuleMixin, Module):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros",
                 device: DeviceLike | None = None, dtype: DTypeLike | None = None):
        Module.__init__(self)
        object.__setattr__(self, "_lazy_arguments", (
            (out_channels, kernel_size, stride, padding, output_padding, groups, bias, dilation,
             padding_mode), dict(device=device, dtype=dtype)))


class LazyConvTranspose1d(_LazyConvTranspose):
    """`ConvTranspose1d` whose `in_channels` is read off its first input."""

    cls_to_become = ConvTranspose1d
    _batched_ndim = 3


class LazyConvTranspose2d(_LazyConvTranspose):
    """`ConvTranspose2d` whose `in_channels` is read off its first input."""

    cls_to_become = ConvTranspose2d
    _batched_ndim = 4


class _LazyNorm(LazyModuleMixin, Module):
    """A lazy norm layer: PyTorch gives the batch and the instance norms one constructor, with
    `affine` and `track_running_stats` on by default for both (unlike `InstanceNorm1d`'s);
    `bias=False` leaves the affine shift out."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: DeviceLike | None = None,
                 dtype: DTypeLike | None = None, *, bias: bool = True):
        Module.__init__(self)
        object.__setattr__(self, "_lazy_arguments", (
            (eps, momentum, affine, track_running_stats),
            dict(device=device, dtype=dtype, bias=bias)))


_N = TypeVar("_N", bound=_LazyNorm)


def _norm(base: type[_N], target: type[Module], batched_ndim: int) -> type[_N]:
    return type(f"Lazy{target.__name__}", (base,), {
        "cls_to_become": target, "_batched_ndim": batched_ndim, "__module__": __name__,
        "__doc__": f"`{target.__name__}` whose `num_features` is read off its first input."})


LazyBatchNorm1d = _norm(_LazyNorm, BatchNorm1d, 2)
LazyBatchNorm2d = _norm(_LazyNorm, BatchNorm2d, 4)
LazyBatchNorm3d = _norm(_LazyNorm, BatchNorm3d, 5)
LazyInstanceNorm1d = _norm(_LazyNorm, InstanceNorm1d, 3)
LazyInstanceNorm2d = _norm(_LazyNorm, InstanceNorm2d, 4)
LazyInstanceNorm3d = _norm(_LazyNorm, InstanceNorm3d, 5)
