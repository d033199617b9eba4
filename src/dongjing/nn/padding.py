"""Padding layers (`nn.ReflectionPad2d`, `nn.ZeroPad2d`, ...) over `F.pad`'s four modes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..tensor import Tensor
from .module import Module
from .resample import pad

if TYPE_CHECKING:
    from collections.abc import Sequence


class _Pad(Module):
    """Pad the last `dims` dims; `padding` is one int for every side or PyTorch's tuple
    (left, right[, top, bottom[, front, back]])."""

    mode = "constant"
    dims = 1

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__()
        self._set(padding, 0.0)

    def _set(self, padding, value: float) -> None:
        if isinstance(padding, int):
            padding = (padding,) * (2 * self.dims)
        padding = tuple(int(p) for p in padding)
        if len(padding) != 2 * self.dims:
            raise ValueError(f"nn.{type(self).__name__}: padding must be an int or a tuple of "
                             f"{2 * self.dims} ints, got {padding}")
        self.padding, self.value = padding, float(value)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in (self.dims + 1, self.dims + 2):
            raise ValueError(f"nn.{type(self).__name__}: expects a {self.dims + 1}-d or "
                             f"{self.dims + 2}-d input, got shape {x.shape}")
        value = self.value if self.mode == "constant" else None
        return pad(x, self.padding, self.mode, value)

    def extra_repr(self) -> str:
        return f"{self.padding}" + (f", value={self.value}" if self.value else "")


class _ConstantPad(_Pad):
    def __init__(self, padding, value: float):
        Module.__init__(self)
        self._set(padding, value)


def _family(mode: str, prefix: str) -> tuple[type[_Pad], type[_Pad], type[_Pad]]:
    made: list[type[_Pad]] = []
    base = _ConstantPad if mode == "constant" else _Pad
    for dims in (1, 2, 3):
        made.append(type(f"{prefix}{dims}d", (base,), {
            "mode": mode, "dims": dims, "__module__": __name__,
            "__doc__": f"Pad the last {dims} dim(s) ({mode} mode, `F.pad`)."}))
    return made[0], made[1], made[2]


ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = _family("reflect", "ReflectionPad")
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = _family("replicate", "ReplicationPad")
CircularPad1d, CircularPad2d, CircularPad3d = _family("circular", "CircularPad")
ConstantPad1d, ConstantPad2d, ConstantPad3d = _family("constant", "ConstantPad")


ZeroPad1d, ZeroPad2d, ZeroPad3d = (
    type(f"ZeroPad{d}d", (_Pad,), {"dims": d, "__module__": __name__,
                                      "__doc__": f"Pad the last {d} dim(s) with zeros."})
    for d in (1, 2, 3))

__all__ = [f"{p}Pad{d}d" for p in ("Reflection", "Replication", "Circular", "Constant", "Zero")
           for d in (1, 2, 3)]
