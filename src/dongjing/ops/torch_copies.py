"""PyTorch's copying forms of its views (`permute_copy`, `transpose_copy`, `diagonal_copy`,
...): the view's values as a fresh tensor that shares no memory with the input, and
`unfold` (sliding windows along one dim), which they include."""

from __future__ import annotations

import inspect
import numbers
from typing import TYPE_CHECKING

from ..dtypes import as_dtype, is_dtype
from ..errors import ArgumentError, ShapeError
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out
from .convert import as_tensor
from .elementwise import clone
from .layout import narrow, split, unbind
from .shape import expand, permute, reshape, squeeze, stack, transpose, unsqueeze
from .torch_compat_shape import movedim, t
from .torch_shape_more import diagonal, select, split_with_sizes

if TYPE_CHECKING:
    from ..types import DTypeLike, Shape, TensorLike


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


def view_copy(input: TensorLike, size: Shape | DTypeLike | None = None,
              dtype: DTypeLike | None = None) -> Tensor:
    """`view` as a fresh tensor: of another shape (`size`), or the same bytes read as another
    `dtype` (PyTorch's two overloads; the last dim scales with the element size; eager only,
    no gradient, as PyTorch's)."""
    x = as_tensor(input)
    if size is not None and is_dtype(size) and dtype is None:  # view_copy(x, dj.int32)
        size, dtype = None, size
    if (size is None) == (dtype is None):
        raise ArgumentError("view_copy: expects a size or a dtype (one of them)")
    if dtype is None:
        return clone(reshape(x, tuple(size) if isinstance(size, (tuple, list)) else (size,)))
    data = x._value("view_copy(dtype=)").copy()  # row-major, its own memory
    try:
        return Tensor._make(data.view(as_dtype(dtype)))
    except ValueError as e:
        raise ShapeError(f"view_copy: a tensor of shape {tuple(x.shape)} and dtype {x.dtype} "
                         f"cannot be read as {as_dtype(dtype)}: {e}") from None


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


def split_copy(input, split_size: int, dim: int = 0):
    """`split` into pieces of `split_size` along `dim`, each a fresh tensor (PyTorch's names;
    a list of sizes is `split_with_sizes_copy`)."""
    if isinstance(split_size, bool) or not isinstance(split_size, numbers.Integral):
        raise ArgumentError(f"split_copy: split_size must be an int, got "
                            f"{type(split_size).__name__} (a list of sizes is "
                            "split_with_sizes_copy)")
    return tuple(clone(piece) for piece in split(as_tensor(input), split_size, dim))


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
