"""PyTorch's `out=` argument: a function's result written into a tensor the caller gives."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TypeVar, overload

import numpy as np

from ..autograd.grad_mode import is_grad_enabled
from ..autograd.provenance import note_modified
from ..backends import is_array, write_into
from ..errors import ArgumentError, AutogradError, DTypeError, ShapeError
from . import Tensor


def write_array(t: Tensor, name: str, value) -> None:
    """Copy `value` into `t`'s memory (same shape, same-kind cast) and bump its version."""
    if not is_array(value):  # device arrays stay where they are
        value = np.asarray(value)
    if value.shape != t.shape:
        raise ShapeError(
            f"{name}: result of shape {value.shape} does not fit in place into a tensor of "
            f"shape {t.shape}"
        )
    if not np.can_cast(value.dtype, t.dtype, "same_kind"):
        raise DTypeError(
            f"{name}: result type {value.dtype} can't be cast to the tensor's dtype {t.dtype}"
        )
    write_into(t._data, value, casting="same_kind")
    t._version[0] += 1
    note_modified(t, name)


def write_out(name: str, result, out):
    """`out` holding `result` (a Tensor, or a tuple of them for a tuple `out`), as PyTorch's
    `out=`: same shape, a dtype the result casts to (same kind), no autograd through it."""
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise ArgumentError(f"{name}(): out= must be a tuple of {len(result)} tensors, "
                                f"got {type(out).__name__}")
        written = [write_out(name, r, o) for r, o in zip(result, out)]
        return type(result)(*written) if hasattr(result, "_fields") else tuple(written)
    if not isinstance(out, Tensor):
        raise ArgumentError(f"{name}(): out= must be a Tensor, got {type(out).__name__}")
    if out._node is not None or result._node is not None:
        raise ArgumentError(f"{name}(): out= is not supported on symbolic tensors (in a graph, "
                            "use the returned tensor or dj.assign)")
    if is_grad_enabled() and (result.requires_grad or out.requires_grad):
        raise AutogradError(f"{name}(): functions with out=... arguments don't support "
                            "automatic differentiation, but one of the arguments requires grad")
    write_array(out, f"{name}(out=)", result._data)
    return out


_F = TypeVar("_F", bound=Callable[..., object])


@overload
def accepts_out(fn: _F, *, after: str | None = None) -> _F: ...
@overload
def accepts_out(fn: None = None, *, after: str | None = None) -> Callable[[_F], _F]: ...


def accepts_out(fn: Callable | None = None, *, after: str | None = None) -> Callable:
    """`fn` with PyTorch's keyword `out=` added: its result written into that tensor (see
    `write_out`). The reported signature lists `out` last, or after the parameter `after`
    (where PyTorch documents it there: `nonzero(input, out=None, as_tuple=False)`)."""
    if fn is None:
        return functools.partial(accepts_out, after=after)
    name = fn.__name__
    sig = inspect.signature(fn)
    params = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
    out_param = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None,
                                  annotation="Tensor | None")
    at = len(params) if after is None else [p.name for p in params].index(after) + 1
    params.insert(at, out_param)
    params += [p for p in sig.parameters.values() if p.kind is p.VAR_KEYWORD]
    # a keyword-only `out` before positional-or-keyword ones is not a valid Python signature;
    # PyTorch's tables do not say which are keyword-only, so the later ones become keyword-only
    seen_kwonly = False
    for i, p in enumerate(params):
        if p.kind is p.KEYWORD_ONLY:
            seen_kwonly = True
        elif seen_kwonly and p.kind is p.POSITIONAL_OR_KEYWORD:
            params[i] = p.replace(kind=p.KEYWORD_ONLY)

    @functools.wraps(fn)
    def with_out(*args, out=None, **kwargs):
        result = fn(*args, **kwargs)
        return result if out is None else write_out(name, result, out)

    with_out.__signature__ = sig.replace(parameters=params)
    return with_out
