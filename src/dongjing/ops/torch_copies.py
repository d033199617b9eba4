"""PyTorch's copying forms of its views (`permute_copy`, `transpose_copy`, `diagonal_copy`,
...): the view's values as a fresh tensor that shares no memory with the input, and
`unfold` (sliding windows along one dim), which they include."""

from __future__ import annotations

import inspect

from ..errors import ArgumentError, ShapeError
from ..tensor.out_argument import accepts_out
from .convert import as_tensor
from .elementwise import clone
from .layout import narrow, split, unbind
from .shape import expand, permute, reshape, squeeze, stack, transpose, unsqueeze
from .torch_compat_shape import movedim, t
from .torch_shape_more import diagonal, select, split_with_sizes


def unfold(input, dimension: int, size: int, step: int):
    """Every window of `size` elements along `dimension`, `step` apart, as a new last dim."""
    x = as_tensor(input)
    d = dimension % x.ndim if x.ndim else 0
    n = x.shape[d] if x.ndim else 1
    if size < 1 or step < 1 or size > n:
        raise ArgumentError(f"unfold: size={size} and step={step} must be positive and size at "
                            f"most the dim's size {n}")
    if x.ndim == 0:
        return reshape(x, (1,))
    windows = [movedim(narrow(x, d, start, size), d, -1)
               for start in range(0, n - size + 1, step)]
    return stack(windows, d)  # (..., count, ..., size): the count where the dim was


def _copy(view):
    def fn(*args, **kwargs):
        out = view(*args, **kwargs)
        if isinstance(out, (tuple, list)):
            return type(out)(clone(o) for o in out)
        return clone(out)

    fn.__name__ = f"{getattr(view, '__name__', 'view')}_copy"
    fn.__doc__ = f"`{fn.__name__[:-5]}` as a fresh tensor (no memory shared with the input)."
    view_signature = inspect.signature(view)  # the view's parameters, without its out=
    fn.__signature__ = view_signature.replace(parameters=[
        p for p in view_signature.parameters.values() if p.name != "out"])
    return fn


def alias_copy(input):
    """A copy of `input`."""
    return clone(as_tensor(input))


def detach(input):
    """`input` cut from the autograd graph (shares its values; no gradient flows back)."""
    return as_tensor(input).detach()


def detach_copy(input):
    """A detached copy of `input`."""
    return clone(as_tensor(input)).detach()


def expand_copy(input, size, *, implicit: bool = False):
    """`expand` as a fresh tensor."""
    return clone(expand(as_tensor(input), *size))


def permute_copy(input, dims):
    """`permute` as a fresh tensor."""
    return clone(permute(as_tensor(input), dims))


def view_copy(input, size):
    """`view`/`reshape` as a fresh tensor."""
    x = as_tensor(input)
    if hasattr(size, "kind") or getattr(size, "dtype", None) is not None and not isinstance(
            size, (tuple, list)):
        raise ShapeError("view_copy: a dtype view is not supported; give a shape")
    return clone(reshape(x, tuple(size) if isinstance(size, (tuple, list)) else (size,)))


def slice_copy(input, dim: int = 0, start=None, end=None, step: int = 1):
    """`input[..., start:end:step, ...]` along `dim`, as a fresh tensor."""
    x = as_tensor(input)
    key = [slice(None)] * x.ndim
    key[dim] = slice(start, end, step)
    return clone(x[tuple(key)])


def unfold_copy(input, dimension: int, size: int, step: int):
    """`unfold` as a fresh tensor."""
    return unfold(input, dimension, size, step)


diagonal_copy = _copy(diagonal)
select_copy = _copy(select)
split_copy = _copy(split)
split_with_sizes_copy = _copy(split_with_sizes)
squeeze_copy = _copy(squeeze)
t_copy = _copy(t)
transpose_copy = _copy(transpose)
unbind_copy = _copy(unbind)
unsqueeze_copy = _copy(unsqueeze)
narrow_copy = accepts_out(_copy(narrow))  # PyTorch documents out= on this one

__all__ = ["alias_copy", "detach", "detach_copy", "expand_copy", "permute_copy", "view_copy",
           "slice_copy", "unfold_copy", "diagonal_copy", "select_copy", "split_copy",
           "split_with_sizes_copy", "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy",
           "unsqueeze_copy", "narrow_copy"]
