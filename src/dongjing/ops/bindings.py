"""The user-facing functions of the op table, generated from each op's declared input policy.

A policy turns the op into `dj.<name>`: it converts the arguments to Tensors (Python scalars take
the other operand's dtype, as in PyTorch), applies the declared promotion, and dispatches. Ops
whose arguments need more (axes, keys, attributes) write their binding by hand and `bind` it.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import dtypes
from ..core.registry import OPS, Op, bind
from ..dispatch import apply, apply1, apply2, apply_binary
from ..tensor import Tensor
from ..tensor.out_argument import write_out
from .convert import as_tensor, pair


def _publish(op: Op, fn: Callable) -> Callable:
    fn.__name__ = fn.__qualname__ = op.public[0] if op.public else op.name
    fn.__module__ = "dongjing"
    fn.__doc__ = op.doc
    return bind(op, fn)


def _to_float(x):
    # cast is declared by ops.elementwise, which is built on this module: read from the table
    return x if x.dtype.kind == "f" else OPS["cast"].binding(x, dtypes.default_float)


def unary(op: Op) -> Callable:
    """f(input, *, out=None): any dtype the op's rule accepts."""
    name = op.public[0] if op.public else op.name

    def fn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        result = apply1(op, as_tensor(input))
        return result if out is None else write_out(name, result, out)

    return _publish(op, fn)


def float_unary(op: Op) -> Callable:
    """f(input, *, out=None): integer and bool inputs are promoted to the default float dtype
    first."""
    name = op.public[0] if op.public else op.name

    def fn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        if type(input) is not Tensor or input._data is None or input._data.dtype.kind != "f":
            input = _to_float(as_tensor(input))
        result = apply1(op, input)
        return result if out is None else write_out(name, result, out)

    return _publish(op, fn)


def binary(op: Op) -> Callable:
    """f(input, other, *, out=None): broadcast, both operands promoted to one dtype."""
    name = op.public[0] if op.public else op.name

    def fn(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
        result = apply_binary(op, input, other, pair)
        return result if out is None else write_out(name, result, out)

    return _publish(op, fn)


def float_binary(op: Op) -> Callable:
    """f(input, other, *, out=None): as `binary`, then integer operands promoted to the default
    float dtype."""
    name = op.public[0] if op.public else op.name

    def fn(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
        a, b = pair(input, other)
        if a.dtype.kind != "f":
            a, b = _to_float(a), _to_float(b)
        result = apply2(op, a, b)
        return result if out is None else write_out(name, result, out)

    return _publish(op, fn)


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
