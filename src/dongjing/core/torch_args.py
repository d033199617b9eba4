"""PyTorch's argument conventions, in one place for every PyTorch-facing function.

- `dim_aliases`: the NumPy-style keyword names PyTorch accepts besides its own (`axis` for
  `dim`, `keepdims` for `keepdim`: `torch.sum(x, axis=0, keepdims=True)` works in PyTorch).
  The function's signature stays PyTorch's (the aliases are accepted, not listed, as PyTorch
  lists them nowhere either).
- `method_form`: a function `f(input, ..., out=None)` as the Tensor method PyTorch documents
  (`Tensor.abs()`, no `out`; `Tensor.mul(value)` where the function says `other`).
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import ArgumentError

_F = TypeVar("_F", bound=Callable[..., object])

ALIASES = {"axis": "dim", "keepdims": "keepdim"}
"""NumPy's keyword name -> PyTorch's, as PyTorch's argument parser accepts them."""


def rename_aliases(name: str, kwargs: dict[str, Any], table: dict[str, str]) -> dict[str, Any]:
    """`kwargs` with each alias in `table` replaced by its PyTorch name (both given: an error)."""
    for alias in [k for k in kwargs if k in table]:
        target = table[alias]
        if target in kwargs:
            raise ArgumentError(f"{name}(): got both {target!r} and its alias {alias!r}")
        kwargs[target] = kwargs.pop(alias)
    return kwargs


def dim_aliases(fn: _F) -> _F:
    """`fn` also accepting `axis=` for its `dim` and `keepdims=` for its `keepdim`."""
    params = _parameter_names(fn)
    if params is None:
        params = inspect.signature(fn).parameters
    table = {alias: name for alias, name in ALIASES.items() if name in params}
    if not table:
        raise TypeError(f"dim_aliases: {fn.__qualname__} has no dim or keepdim parameter")
    name, aliases = fn.__name__, table.keys()

    @functools.wraps(fn)  # __wrapped__: inspect.signature reports fn's own parameters
    def accepting_aliases(*args, **kwargs):
        if kwargs and not aliases.isdisjoint(kwargs):
            kwargs = rename_aliases(name, kwargs, table)
        return fn(*args, **kwargs)

    return accepting_aliases  # type: ignore  (fn's own signature: the aliases go unlisted)


def hide_variadic_keywords(fn: _F) -> _F:
    """Report `fn`'s signature without its `**kwargs` (keywords PyTorch accepts for an older
    form, such as `unbiased=`, that its documented signature does not list)."""
    sig = inspect.signature(fn)
    fn.__signature__ = sig.replace(parameters=[
        p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD])
    return fn


def unlisted_keywords(fn: _F, *names: str) -> _F:
    """Report `fn`'s signature without the keyword-only parameters `names`: keywords PyTorch
    accepts but leaves out of its documented signature (`sum(..., out=)`,
    `uniform_(..., generator=)`), which the comparison with PyTorch's table follows."""
    sig = inspect.signature(fn)
    fn.__signature__ = sig.replace(parameters=[
        p for p in sig.parameters.values()
        if not (p.kind is p.KEYWORD_ONLY and p.name in names)])
    return fn


def _copy(fn: Callable) -> Callable:
    """A new function object with `fn`'s code, closure, defaults and attributes (a wrapper's copy
    still calls what it wraps): a second signature for one function, at no cost per call."""
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"method_form: {fn!r} is not a Python function")
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__dict__.update(fn.__dict__)
    copy.__dict__.pop("__wrapped__", None)
    copy.__doc__, copy.__qualname__, copy.__module__ = fn.__doc__, fn.__qualname__, fn.__module__
    return copy


def _parameter_names(fn: Callable) -> tuple | None:
    """The parameter names of a plain function (no wrapper, no declared signature), else None."""
    code = getattr(fn, "__code__", None)
    if code is None or "__wrapped__" in fn.__dict__ or "__signature__" in fn.__dict__:
        return None
    return code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


def method_form(fn: Callable, rename: dict[str, str] | None = None,
                drop: tuple[str, ...] = ("out",)) -> Callable:
    """`fn` as a Tensor method: its documented signature without `drop` (the function's `out=`,
    which PyTorch's methods do not take), and with the parameters in `rename` (function's name ->
    method's) under the method's names, the function's names still accepted."""
    names = _parameter_names(fn)
    if names is not None and not any(n in names for n in (*(rename or ()), *drop)):
        return fn  # (read from the code object: most methods need no second signature)
    sig = inspect.signature(fn)
    rename = {k: v for k, v in (rename or {}).items() if k in sig.parameters}
    if not rename and not any(d in sig.parameters for d in drop):
        return fn
    params = [p.replace(name=rename.get(p.name, p.name)) for p in sig.parameters.values()
              if p.name not in drop]
    if rename:
        back = {v: k for k, v in rename.items()}
        name = fn.__name__

        @functools.wraps(fn)
        def method(*args, **kwargs):
            if kwargs:
                kwargs = rename_aliases(name, kwargs, back)
            return fn(*args, **kwargs)

        del method.__wrapped__
    else:
        method = _copy(fn)
    method.__signature__ = sig.replace(parameters=params)
    return method


# method name -> {the function's parameter name: the name PyTorch's method documents}
METHOD_PARAMETERS = {
    "mul": {"other": "value"}, "div": {"other": "value"}, "floor_divide": {"other": "value"},
    "fmod": {"other": "divisor"}, "remainder": {"other": "divisor"},
    "matmul": {"other": "tensor2"}, "bmm": {"mat2": "batch2"}, "narrow": {"dim": "dimension"},
    "type_as": {"other": "tensor"}, "split": {"split_size_or_sections": "split_size"},
    "dot": {"tensor": "other"}, "where": {"other": "y"}, "true_divide": {"other": "value"},
    **{name: {"indices_or_sections": "split_size_or_sections"}
       for name in ("hsplit", "vsplit", "dsplit")},
}
# method name -> the function's keywords its method does not document (still accepted)
METHOD_UNLISTED = {
    "mm": ("out", "out_dtype"), "bmm": ("out", "out_dtype"), "addmm": ("out", "out_dtype"),
    "baddbmm": ("out", "out_dtype"),
    "sort": ("out", "stable"), "argsort": ("stable",), "gather": ("out", "sparse_grad"),
    "softmax": ("dtype",), "log_softmax": ("dtype",), "nonzero": ("out", "as_tuple"),
    "clamp_min": (), "clamp_max": (),  # PyTorch documents these methods with `out`
}


def as_method(name: str, fn: Callable) -> Callable:
    """The function `fn` as the Tensor method `name` (an in-place `mul_` as `mul`): PyTorch's
    method parameters (without `out=`, under the method's names, see the tables above)."""
    base = name[:-1] if name.endswith("_") and not name.startswith("__") else name
    return method_form(fn, METHOD_PARAMETERS.get(base), METHOD_UNLISTED.get(base, ("out",)))
