"""Algebraic simplification: local rewrites that make a node cheaper or let it disappear.

Each rule is exact, bit for bit, for every input including NaN, inf, -0.0 and large integers
(same values, same shape, same dtype). Hence `x + 0.0` is kept (-0.0 + 0.0 is +0.0) while
`x + (-0.0)` goes, `x * 0` is folded only for integers (NaN * 0 is NaN, -1.0 * 0 is -0.0), and
`cast(cast(x))` only through a type that holds every value of x. `exp(log x)` and `log(exp x)`
are left alone: in floating point they are not the identity (rounding, overflow, x <= 0).

The arithmetic rules name no op: they read the algebraic facts of each op's record
(`identity`, `absorbing`, `commutative`, `mask_operand`; see `dongjing.core.registry`).
"""

from __future__ import annotations

import math

from ... import dtypes
from ...backends import backend_of, default_backend
from ...core.registry import OPS
from ...dtypes import is_floating
from ...errors import ShapeError
from ...ops.infer import broadcast
from ..ir import PassResult, Rebuilder, numel
from .fold_constants import MAX_FOLD_ELEMENTS


def _scalar_constant(node, value, negative_zero: bool | None = None) -> bool:
    """`node` is a constant of size 1 equal to `value`; for a zero, `negative_zero` (if given)
    also asks for its sign (an integer zero counts as +0)."""
    if node.op.name != "constant":
        return False
    v = node.attrs["value"]
    if v.size != 1 or not bool(v.reshape(()) == value):
        return False
    sign = bool(backend_of(v).xp.signbit(v.reshape(())))
    return negative_zero is None or sign == negative_zero


def _unit(op, dtype) -> tuple:
    """(the op's declared unit element, its sign as for `_scalar_constant`, how to show it):
    for floats a zero's sign counts (x + (-0.0) and x - (+0.0) are exact for every float x,
    x + 0.0 is not, for x = -0.0); an integer zero has none."""
    unit = op.identity
    if unit == 0 and is_floating(dtype):
        negative = math.copysign(1.0, unit) < 0
        return unit, negative, "-0.0" if negative else "+0.0"
    return unit, None, str(int(unit)) if float(unit).is_integer() else str(unit)


def _passes_through(out, x, c) -> bool:
    """`out = f(x, c)` with `c` of size 1 has exactly `x`'s shape and dtype."""
    cv = c.attrs["value"]
    return out.dtype == x.dtype and out.shape == x.shape and cv.ndim <= len(x.shape)


def _known_same(a, b) -> bool:
    return a.shape == b.shape and numel(a.shape) is not None


def _identity(node, x) -> bool:
    return node.dtype == x.dtype and _known_same(node, x)


def _rule(rb, node, inputs):
    """The replacement of `node` (a node of the new graph), a rule's description, or None."""
    found = _arithmetic(rb, node, inputs)
    if found is not None:
        return found
    op = node.op.name
    if node.op.kind == "elementwise" and node.op.ufunc is not None and len(inputs) > 1:
        found = _unbroadcast(rb, node, inputs)
        if found is not None:
            return found
    if op == "neg" and inputs[0].op.name == "neg":
        return inputs[0].inputs[0], "neg(neg(x)) -> x"
    if op in ("stop_gradient", "clone"):
        return inputs[0], f"{op}(x) -> x (identity when running)"
    if op == "pow_scalar" and node.attrs["exponent"] == 1 and node.dtype == inputs[0].dtype:
        return inputs[0], "x ** 1 -> x"
    if op == "cast":
        return _cast(node, inputs[0])
    if op == "permute":
        return _permute(rb, node, inputs[0])
    if op in ("reshape", "reshape_like", "expand", "broadcast_to_like", "squeeze"):
        return _reshape(rb, node, inputs)
    return None


def _arithmetic(rb, node, inputs):
    """The rules of the algebraic facts on a two-input op's record: its unit element (on the
    right; on either side when commutative) and, for integers and bools, its absorbing element;
    a bool operand of a `mask_operand` op needs no cast to the float result dtype."""
    facts = node.op
    if len(inputs) != 2:
        return None
    name = facts.name
    a, b = inputs
    sides = ((a, b), (b, a)) if facts.commutative else ((a, b),)
    if facts.identity is not None:
        unit, negative, shown = _unit(facts, node.dtype)
        for (x, c), form in zip(sides, (f"{name}(x, {shown}) -> x", f"{name}({shown}, x) -> x")):
            if _scalar_constant(c, unit, negative) and _passes_through(node, x, c):
                return x, form
    if facts.absorbing is not None and node.dtype.kind in "iub":  # float: NaN * 0, inf * 0
        for x, c in sides:
            if _scalar_constant(c, facts.absorbing) and _passes_through(node, x, c):
                return (_absorbed(rb, node, x, facts.absorbing),
                        f"{name}(x, {facts.absorbing}) -> {facts.absorbing} (integers)")
    if facts.mask_operand and is_floating(node.dtype):
        for i, c in enumerate(inputs):
            other = inputs[1 - i]
            if (c.op.name == "cast" and c.inputs[0].dtype.kind == "b" and c.shape == node.shape
                    and other.dtype == node.dtype):
                pair = (other, c.inputs[0]) if i else (c.inputs[0], other)
                return rb.copy(node, pair), f"{name}(x, cast(mask)) -> {name}(x, mask)"
    return None


def _unbroadcast(rb, node, inputs):
    """An explicit broadcast feeding a ufunc: let the ufunc broadcast instead."""
    if numel(node.shape) is None:
        return None
    for i, x in enumerate(inputs):
        if x.op.name not in ("expand", "broadcast_to_like"):
            continue
        source = x.inputs[0]
        rest = [n.shape for j, n in enumerate(inputs) if j != i]
        try:
            shape = broadcast(node.op.name, source.shape, *rest)
        except ShapeError:
            continue
        if shape == node.shape and source.dtype == x.dtype:
            new_inputs = inputs[:i] + (source,) + inputs[i + 1:]
            return rb.copy(node, new_inputs), f"{node.op.name}(broadcast(x), y) -> broadcasting"
    return None


def _absorbed(rb, node, x, value):
    """`node`'s shape and dtype filled with `value`: a constant when small enough to fold."""
    if numel(node.shape) is not None and numel(node.shape) <= MAX_FOLD_ELEMENTS:
        return rb.constant(default_backend().full(node.shape, value, node.dtype), node)
    return rb.copy(node, (x,), op=OPS["fill_like"], attrs={"value": value, "dtype": node.dtype})


def _cast(node, x):
    if x.dtype == node.dtype:
        return x, "cast to the same dtype -> x"
    if x.op.name == "cast":
        inner = x.inputs[0]
        if inner.dtype == node.dtype and dtypes.holds_every_value(inner.dtype, x.dtype):
            return inner, "cast(cast(x, wider), x.dtype) -> x"
    return None


def _permute(rb, node, x):
    dims = node.attrs["dims"]
    if dims == tuple(range(len(dims))):
        return x, "permute by the identity -> x"
    if x.op.name == "permute":
        inner = x.attrs["dims"]
        combined = tuple(inner[d] for d in dims)
        source = x.inputs[0]
        if combined == tuple(range(len(combined))):
            return source, "permute(permute(x)) by inverse dims -> x"
        return (rb.copy(node, (source,), attrs={"dims": combined}),
                "permute(permute(x)) -> one permute")
    return None


def _reshape(rb, node, inputs):
    x = inputs[0]
    if _identity(node, x):
        return x, f"{node.op.name} to the same shape -> x"
    op = node.op.name
    if op == "squeeze" and x.op.name == "unsqueeze" and node.attrs["dim"] == (x.attrs["dim"],):
        return x.inputs[0], "squeeze(unsqueeze(x, d), d) -> x"
    if op in ("reshape", "reshape_like") and x.op.name == "reshape":
        target = node.shape if op == "reshape_like" else node.attrs["shape"]
        if op == "reshape" or numel(target) is not None:
            return (rb.copy(node, (x.inputs[0],), op=OPS["reshape"], attrs={"shape": target}),
                    "reshape(reshape(x)) -> one reshape")
    if op == "reshape_like" and numel(node.shape) is not None:
        return (rb.copy(node, (x,), op=OPS["reshape"], attrs={"shape": node.shape}),
                "reshape_like with a known shape -> reshape")
    if op == "broadcast_to_like" and numel(node.shape) is not None:
        return (rb.copy(node, (x,), op=OPS["expand"], attrs={"shape": node.shape}),
                "broadcast_to_like with a known shape -> expand")
    return None


def simplify_algebra(graph, fetches: list) -> PassResult:
    """Apply the rewrite rules once over the graph (the pass manager repeats to a fixed point)."""
    rb = Rebuilder(graph, lazy=True)
    changes = []
    for node in graph.nodes:
        inputs = rb.inputs(node)
        found = _rule(rb, node, inputs)
        if found is None:
            rb.map[node] = rb.copy(node, inputs)
            continue
        replacement, why = found
        rb.map[node] = replacement
        changes.append(f"%{node.name}: {why}")
    return PassResult(*rb.finish(fetches), changes)
