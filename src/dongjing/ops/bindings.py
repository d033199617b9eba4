"""The user-facing functions of the op table, generated from each op's declared input policy.

A policy turns the op into `dj.<name>`: it converts the arguments to Tensors (Python scalars take
the other operand's dtype, as in PyTorch), applies the declared promotion, and dispatches. Ops
whose arguments need more (axes, keys, attributes) write their binding by hand and `bind` it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from .. import dtypes
from ..core.registry import OPS, Op, bind
from ..dispatch import apply, apply1, apply2, apply_binary
from ..dtypes import is_floating
from ..errors import ArgumentError
from ..tensor import Tensor
from ..tensor.out_argument import write_out
from .convert import as_tensor, pair

if TYPE_CHECKING:
    from ..types import TensorLike

_F = TypeVar("_F", bound=Callable[..., object])


def _publish(op: Op, fn: _F) -> _F:
    fn.__name__ = fn.__qualname__ = op.public[0] if op.public else op.name
    fn.__module__ = "dongjing"
    fn.__doc__ = op.doc
    return bind(op, fn)


def _to_float(x: Tensor) -> Tensor:
    # cast is declared by ops.elementwise, which is built on this module: read from the table
    return x if is_floating(x.dtype) else OPS["cast"].binding(x, dtypes.default_float)


def unary(op: Op) -> Callable[..., Tensor]:
    """f(input, *, out=None): any dtype the op's rule accepts."""
    name = op.public[0] if op.public else op.name

    def fn(input: TensorLike, *, out: Tensor | None = None) -> Tensor:
        result = apply1(op, as_tensor(input))
        return result if out is None else write_out(name, result, out)

    return _publish(op, fn)


def predicate(op: Op) -> Callable[..., Tensor]:
    """f(input): a test of each element (PyTorch's `isnan` & co. take no `out=`)."""

    def fn(input: TensorLike) -> Tensor:
        return apply1(op, as_tensor(input))

    return _publish(op, fn)


def unary_no_out(op: Op) -> Callable[..., Tensor]:
    """f(input): an op whose PyTorch function takes no `out=` (`torch.relu`)."""

    def fn(input: TensorLike) -> Tensor:
        return apply1(op, as_tensor(input))

    return _publish(op, fn)


def float_unary(op: Op) -> Callable[..., Tensor]:
    """f(input, *, out=None): integer and bool inputs are promoted to the default float dtype
    first."""
    name = op.public[0] if op.public else op.name

    def fn(input: TensorLike, *, out: Tensor | None = None) -> Tensor:
        if type(input) is not Tensor or input._data is None or not is_floating(input._data.dtype):
            input = _to_float(as_tensor(input))
        result = apply1(op, input)
        return result if out is None else write_out(name, result, out)

    return _publish(op, fn)


def binary(op: Op) -> Callable[..., Tensor]:
    """f(input, other, *, out=None): broadcast, both operands promoted to one dtype."""
    name = op.public[0] if op.public else op.name

    def fn(input: TensorLike, other: TensorLike, *, out: Tensor | None = None) -> Tensor:
        result = apply_binary(op, input, other, pair)
        return result if out is None else write_out(name, result, out)

    return _publish(op, fn)


def float_binary(op: Op) -> Callable[..., Tensor]:
    """f(input, other, *, out=None): as `binary`, then integer operands promoted to the default
    float dtype."""
    name = op.public[0] if op.public else op.name

    def fn(input: TensorLike, other: TensorLike, *, out: Tensor | None = None) -> Tensor:
        a, b = pair(input, other)
        if not is_floating(a.dtype):
            a, b = _to_float(a), _to_float(b)
        result = apply2(op, a, b)
        return result if out is None else write_out(name, result, out)

    return _publish(op, fn)


def reflected(fn: Callable[[TensorLike, TensorLike], Tensor]
              ) -> Callable[[TensorLike, TensorLike], Tensor]:
    """The reflected operator of `fn` (`__rsub__` of sub: `other - self`)."""

    def method(self: Tensor, other: TensorLike) -> Tensor:
        return fn(other, self)

    method.__name__ = f"reflected_{fn.__name__}"
    return method
def _check_number(name: str, what: str, value) -> None:
    if isinstance(value, (bool, Tensor)) or not dtypes.is_scalar_number(value):
        raise ArgumentError(f"{name}(): {what} must be a Python number, got "
                            f"{type(value).__name__}")


_ONE = 1


def alpha_binary(op: Op) -> Callable[..., Tensor]:
    """f(input, other, *, alpha=1, out=None): `input <op> alpha * other`, as `binary`."""
    name = op.public[0] if op.public else op.name

    def fn(input: TensorLike, other: TensorLike, *, alpha: float = 1,
           out: Tensor | None = None) -> Tensor:
        if alpha is not _ONE:  # (identity: the default costs one comparison)
            _check_number(name, "alpha", alpha)
            if alpha != 1:
                other = OPS["mul"].binding(other, alpha)
        result = apply_binary(op, input, other, pair)
        return result if out is None else write_out(name, result, out)

    return _publish(op, fn)


def division(op: Op) -> Callable[..., Tensor]:
    """f(input, other, *, rounding_mode=None, out=None): true division (integers give the
    default float dtype), or the quotient rounded `"trunc"` toward zero or to the `"floor"`
    (in the operands' dtype), as PyTorch's `div`."""
    name = op.public[0] if op.public else op.name

    def fn(input: TensorLike, other: TensorLike, *, rounding_mode: str | None = None,
           out: Tensor | None = None) -> Tensor:
        a, b = pair(input, other)
        if rounding_mode is None:
            if not is_floating(a.dtype):
                a, b = _to_float(a), _to_float(b)
            result = apply2(op, a, b)
        elif rounding_mode == "floor":
            result = OPS["floor_divide"].binding(a, b)
        elif rounding_mode == "trunc":
            result = _trunc_divide(op, a, b)
        else:
            raise ArgumentError(f"{name}(): rounding_mode must be None, 'trunc' or 'floor', got "
                                f"{rounding_mode!r}")
        return result if out is None else write_out(name, result, out)

    return _publish(op, fn)


def _trunc_divide(op: Op, a: Tensor, b: Tensor) -> Tensor:
    """The quotient rounded toward zero, in the operands' dtype (integers: exactly, from the
    floor quotient corrected where the signs differ and a remainder is left)."""
    if is_floating(a.dtype):
        return OPS["trunc"].binding(apply2(op, a, b))
    floor = OPS["floor_divide"].binding(a, b)
    rest = OPS["ne"].binding(OPS["sub"].binding(a, OPS["mul"].binding(floor, b)), 0)
    negative = OPS["ne"].binding(OPS["lt"].binding(a, 0), OPS["lt"].binding(b, 0))
    bump = OPS["cast"].binding(OPS["logical_and"].binding(rest, negative), floor.dtype)
    return OPS["add"].binding(floor, bump)


def nary(op: Op) -> Callable[..., Tensor]:
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
