"""Autocast's casts (PyTorch's `torch.autocast`): before an op or a listed public function runs
inside an autocast region, its floating inputs are cast as the op lists say (see
`core.autocast_lists`). Dispatch asks `cast_op_inputs` for every op record; public functions
that PyTorch lists as one op (`F.linear`, `F.cross_entropy`, ...) carry `autocast_policy`,
which casts their arguments once and runs their body with autocasting suspended.

Casts are ordinary `cast` ops, so they are recorded on the tape (gradients flow back in the
input's dtype) and become graph nodes when a graph is being built.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

from . import dtypes
from .backends import backend_of, default_backend
from .core import autocast_state, late
from .core import eager_modes as _eager_modes
from .core.autocast_lists import FLOAT32, LOWER, PROMOTE, policy
from .tensor import Tensor, ndarray

_plain = _eager_modes.plain


def device_type_of(tensors) -> str:
    """The device type autocast consults for `tensors`: the first array's; symbolic tensors
    alone count as their graph's (the device of the state or traced arguments it reads: the
    program runs there); a graph that has read neither yet (placeholders alone: it runs
    where its feeds go) counts as the default backend's when a region is open for it, else as
    the innermost open region's (built under `autocast("cuda")`, it is meant for the GPU)."""
    for t in tensors:
        data = t._data
        if data is not None:
            if type(data) is ndarray:
                return "cpu"
            found = backend_of(data, None)
            if found is not None:
                return found.device_type
    for t in tensors:
        node = t._node
        if node is not None:
            graph = node.graph
            while graph.parent is not None:
                graph = graph.parent
            if graph.device_type is not None:
                return graph.device_type
            fallback = default_backend().device_type
            if autocast_state.active_dtype(fallback) is None:
                return autocast_state.innermost_active_type() or fallback
            return fallback
    return default_backend().device_type


def _eligible(t) -> bool:
    """PyTorch's rule: floating tensors other than float64 are cast."""
    d = t.dtype
    return d is not None and dtypes.is_floating(d) and d != dtypes.float64


def target_dtype(rule: str, tensors, low_dtype):
    """The dtype `rule` casts eligible `tensors` to (None: leave them)."""
    if rule == LOWER:
        return low_dtype
    if rule == FLOAT32:
        return dtypes.float32
    found = None  # PROMOTE: the widest eligible dtype
    for t in tensors:
        if _eligible(t):
            found = t.dtype if found is None else dtypes.promote(found, t.dtype)
    return found


def cast_all(tensors, dtype):
    """Each eligible tensor of `tensors` as `dtype` (others unchanged)."""
    cast = late.cast
    return tuple(cast(t, dtype) if _eligible(t) and t.dtype != dtype else t for t in tensors)


def cast_op_inputs(op, inputs: tuple) -> tuple:
    """`inputs` of op record `op`, cast as autocast's lists say (unchanged outside regions)."""
    if _plain.on or not inputs:
        return inputs
    rule = policy_for(op.name, inputs)
    if rule is None:
        return inputs
    rule, low = rule
    dtype = target_dtype(rule, inputs, low)
    if dtype is None:
        return inputs
    with autocast_state.suspended():
        return cast_all(inputs, dtype)


def policy_for(name: str, tensors):
    """`(policy, low-precision dtype)` for `name` on `tensors` in this thread now, or None."""
    if not autocast_state.any_active():
        return None
    device = device_type_of(tensors)
    low = autocast_state.active_dtype(device)
    if low is None:
        return None
    rule = policy(device, name)
    return None if rule is None else (rule, low)


def _tensors_in(args, kwargs) -> list:
    found = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(v for v in value if isinstance(v, Tensor))
    return found


def _cast_value(value, dtype):
    if isinstance(value, Tensor):
        return cast_all((value,), dtype)[0]
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return type(value)(_cast_value(v, dtype) for v in value)
    return value


_F = TypeVar("_F", bound=Callable[..., object])


def autocast_policy(name: str) -> Callable[[_F], _F]:
    """Decorate a public function that PyTorch's autocast lists as one op called `name`: in
    an autocast region its tensor arguments are cast per the lists, and its body runs with
    autocasting suspended (as PyTorch runs an autocast op's kernel)."""

    def decorate(fn: _F) -> _F:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if _plain.on or not autocast_state.any_active():
                return fn(*args, **kwargs)
            tensors = _tensors_in(args, kwargs)
            found = policy_for(name, tensors) if tensors else None
            if found is None:
                return fn(*args, **kwargs)
            dtype = target_dtype(found[0], tensors, found[1])
            with autocast_state.suspended():
                if dtype is not None:
                    args = tuple(_cast_value(a, dtype) for a in args)
                    kwargs = {k: _cast_value(v, dtype) for k, v in kwargs.items()}
                return fn(*args, **kwargs)

        return wrapper  # type: ignore  (fn's signature and return)

    return decorate


__all__ = ["FLOAT32", "LOWER", "PROMOTE", "autocast_policy", "cast_op_inputs", "device_type_of"]
