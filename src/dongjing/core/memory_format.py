"""PyTorch's memory formats and layouts by name (`dj.preserve_format`, `dj.channels_last`,
`dj.strided`, ...), and the rules for the `memory_format=` / `layout=` arguments that take them.

dongjing keeps every tensor it creates row-major and dense, so `preserve_format` and
`contiguous_format` are honoured as they are, `channels_last(_3d)` (a different order of the
elements in memory) is refused with an `ArgumentError`, and so is any layout but `strided`."""

from __future__ import annotations

from ..errors import ArgumentError


class memory_format:
    """A memory format, named as PyTorch names it."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"dongjing.{self.name}"

    def __reduce__(self):  # pickles as the one object of its name
        return self.name


class layout:
    """A tensor layout, named as PyTorch names it (dongjing has `strided` only)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"dongjing.{self.name}"

    def __reduce__(self):
        return self.name


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
strided = layout("strided")

_ROW_MAJOR = (preserve_format, contiguous_format)


def check_memory_format(name: str, value, allow_none: bool = True) -> None:
    """Refuse a `memory_format=` dongjing cannot honour (any but preserve/contiguous)."""
    if value is None and allow_none or any(value is f for f in _ROW_MAJOR):
        return
    if isinstance(value, memory_format):
        raise ArgumentError(f"{name}: memory_format={value!r} is not supported (dongjing "
                            "stores tensors row-major: use dj.contiguous_format or "
                            "dj.preserve_format)")
    raise ArgumentError(f"{name}: memory_format must be a dj memory format such as "
                        f"dj.preserve_format, got {value!r}")


def check_layout(name: str, value) -> None:
    """Refuse a `layout=` other than `strided` (None means strided)."""
    if value is None or value is strided:
        return
    raise ArgumentError(f"{name}: layout={value!r} is not supported (dongjing has dense "
                        "strided tensors only: dj.strided)")


def is_contiguous_as(shape: tuple, strides: tuple, fmt) -> bool:
    """Whether elements with `strides` (in elements) are dense in the order of `fmt`, as
    PyTorch decides it: channels_last reads a 4-d (N, C, H, W) tensor in the order N, H, W,
    C, channels_last_3d a 5-d one in N, D, H, W, C; other ranks are not channels-last. Dims of
    size 1 do not count."""
    rank = len(shape)
    if 0 in shape:
        return True
    if fmt is channels_last and rank != 4 or fmt is channels_last_3d and rank != 5:
        return False
    order = list(range(rank)) if fmt in _ROW_MAJOR else [0, *range(2, rank), 1]
    expected = 1
    for dim in reversed(order):
        if shape[dim] != 1 and strides[dim] != expected:
            return False
        expected *= shape[dim]
    return True
