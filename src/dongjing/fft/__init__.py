"""`dj.fft` (PyTorch's `torch.fft`), the part that real tensors can hold: the sample
frequencies (`fftfreq`, `rfftfreq`) and the zero-frequency shifts (`fftshift`, `ifftshift`,
rolls, so they differentiate and trace). dongjing has no complex dtype, so the transforms
themselves (`fft`, `ifft`, `rfft`, `irfft`, `fft2`, `fftn`, ...) raise a NotImplementedError
that says so instead of returning something else."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import ops
from ..core.memory_format import check_layout, strided
from ..dtypes import is_floating
from ..ops.convert import as_tensor
from ..tensor import Tensor
from ..tensor.creation import arange
from ..tensor.out_argument import write_out

if TYPE_CHECKING:
    from ..types import DeviceLike, Dim, DTypeLike, TensorLike


def fftfreq(n: int, d: float = 1.0, *, out: Tensor | None = None,
            dtype: DTypeLike | None = None, layout: object = strided,
            device: DeviceLike | None = None, requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an n-point transform: [0, 1, ..., n/2 - 1, -n/2, ..., -1] /
    (d * n) (for odd n the positive half runs to (n - 1) / 2)."""
    n = int(n)
    if n < 1:
        raise ValueError(f"fft.fftfreq: n must be positive, got {n}")
    positive = (n - 1) // 2 + 1
    k = ops.concat([arange(0, positive, dtype=dtype), arange(-(n // 2), 0, dtype=dtype)], 0) \
        if n > 1 else arange(0, 1, dtype=dtype)
    freqs = (k if is_floating(k.dtype) else ops.cast(k, "float32")) * (1.0 / (d * n))
    return _placed("fft.fftfreq", freqs, layout, device, requires_grad, out)


def rfftfreq(n: int, d: float = 1.0, *, out: Tensor | None = None,
             dtype: DTypeLike | None = None, layout: object = strided,
             device: DeviceLike | None = None,
             requires_grad: bool = False) -> Tensor:
    """The sample frequencies of a real n-point transform's n // 2 + 1 outputs:
    [0, 1, ..., n // 2] / (d * n)."""
    n = int(n)
    if n < 1:
        raise ValueError(f"fft.rfftfreq: n must be positive, got {n}")
    k = arange(0, n // 2 + 1, dtype=dtype or "float32")
    return _placed("fft.rfftfreq", k * (1.0 / (d * n)), layout, device, requires_grad, out)


def _placed(name: str, t: Tensor, layout, device, requires_grad: bool, out) -> Tensor:
    """`t` on `device`, requiring grad on request, or written into `out` (PyTorch's `out=`)."""
    check_layout(name, layout)
    if device is not None:
        t = t.to(device)
    t = t.requires_grad_(True) if requires_grad else t
    return t if out is None else write_out(name, t, out)


def _shift_dims(x: Tensor, dim) -> tuple:
    if dim is None:
        return tuple(range(x.ndim))
    return tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)


def fftshift(input: TensorLike, dim: Dim = None) -> Tensor:
    """Move the zero frequency to the middle: a roll by n // 2 along each of `dim` (all)."""
    x = as_tensor(input)
    dims = _shift_dims(x, dim)
    return ops.roll(x, tuple(x.shape[d] // 2 for d in dims), dims)


def ifftshift(input: TensorLike, dim: Dim = None) -> Tensor:
    """The inverse of `fftshift`: a roll by -(n // 2) along each of `dim` (all)."""
    x = as_tensor(input)
    dims = _shift_dims(x, dim)
    return ops.roll(x, tuple(-(x.shape[d] // 2) for d in dims), dims)


def _refuse(name: str):
    raise NotImplementedError(
        f"dj.fft.{name}: dongjing tensors have no complex dtype, so the Fourier transform "
        "itself is not provided (fftfreq, rfftfreq, fftshift and ifftshift are)")


def _no_complex(name: str, rank: str):
    """A transform with PyTorch's parameters (`rank`: "1" for fft, "2" for fft2, "n" for fftn)
    that raises, saying why."""
    if rank == "1":
        def transform(input: Tensor, n: int | None = None, dim: int = -1,
                      norm: str | None = None, *, out: Tensor | None = None) -> Tensor:
            _refuse(name)
    elif rank == "2":
        def transform(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *,
                      out: Tensor | None = None) -> Tensor:
            _refuse(name)
    else:
        def transform(input: Tensor, s=None, dim=None, norm: str | None = None, *,
                      out: Tensor | None = None) -> Tensor:
            _refuse(name)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"Not provided: `{name}` returns complex tensors, which dongjing lacks."
    return transform


for _name in ("fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
              "rfftn", "irfftn", "hfft", "ihfft"):
    globals()[_name] = _no_complex(_name, "2" if _name.endswith("2") else
                                   "n" if _name.endswith("n") else "1")

__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift", "fft", "ifft", "rfft", "irfft",
           "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfft",
           "ihfft"]
