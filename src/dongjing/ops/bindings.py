"""The user-facing functions of the op table, generated from each op's declared input policy.

A policy turns the op into `dj.<name>`: it converts the arguments to Tensors (Python scalars take
the other operand's dtype, as in PyTorch), applies the declared promotion, and dispatches. Ops
whose arguments need more (axes, keys, attributes) write their binding by hand and `bind` it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import dtypes
from ..core.registry import OPS, Op, bind
from ..dispatch import apply, apply1, apply2, apply_binary
from ..dtypes import is_floating
from ..tensor import Tensor
from .convert import as_tensor, pair

if TYPE_CHECKING:
    from ..types import TensorLike


def _publish(op: Op, fn: Callable) -> Callable:
    fn.__name__ = fn.__qualname__ = op.public[0] if op.public else op.name
    fn.__module__ = "dongjing"
    fn.__doc__ = op.doc
    return bind(op, fn)


def _to_float(x):
    # cast is declared by ops.elementwise, which is built on this module: read from the table
    return x if is_floating(x.dtype) else OPS["cast"].binding(x, dtypes.default_float)


def unary(op: Op) -> Callable:
    """f(x): any dtype the op's rule accepts."""
    return _publish(op, lambda x: apply1(op, as_tensor(x)))


def float_unary(op: Op) -> Callable:
    """f(x): integer and bool inputs are promoted to the default float dtype first."""

    def fn(x):
        if type(x) is not Tensor or x._data is None or not is_floating(x._data.dtype):
            x = _to_float(as_tensor(x))
        return apply1(op, x)

    return _publish(op, fn)


def binary(op: Op) -> Callable:
    """f(a, b): broadcast, both operands promoted to one dtype."""

    def fn(a, b):
        return apply_binary(op, a, b, pair)

    return _publish(op, fn)


def float_binary(op: Op) -> Callable:
    """f(a, b): as `binary`, then integer operands promoted to the default float dtype."""

    def fn(a, b):
        a, b = pair(a, b)
        if not is_floating(a.dtype):
            a, b = _to_float(a), _to_float(b)
        return apply2(op, a, b)

    return _publish(op, fn)


def reflected(fn: Callable[[TensorLike, TensorLike], Tensor]) -> Callable:
    """The reflected operator of `fn` (`__rsub__` of sub: `other - self`)."""

    def method(self: Tensor, other: TensorLike) -> Tensor:
        return fn(other, self)

    method.__name__ = f"reflected_{fn.__name__}"
    return method


def nary(op: Op) -> Callable:
    """f(*tensors)."""
    return _publish(op, lambda *xs: apply(op, *[as_tensor(x) for x in xs]))


def public_functions() -> dict[str, Callable]:
    """Every published name of the op table -> its binding."""
    found = {}
    for op in OPS.values():
        if op.binding is not None:
            for name in op.public:
                found[name] = op.binding
    return found
