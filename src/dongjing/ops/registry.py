"""The op table: every primitive declared once (forward, infer, vjp, kind), used by both executors.

An op's parts:
- ``forward(*arrays, **attrs) -> array``: the NumPy computation.
- ``infer(*specs, **attrs) -> (shape, dtype)``: output shape (``None`` for an unknown dim) and
  dtype from the inputs' ``Spec``s; raises a ShapeError / DTypeError naming the op.
- ``vjp(g, inputs, out, needs, attrs) -> tuple``: the gradient of each input (or ``None``),
  written with dongjing ops on Tensors, so that it runs eagerly, emits graph nodes, and is
  itself differentiable. ``needs[i]`` says whether input i wants a gradient.
- ``kind``: "elementwise", "reduce", "opaque", "source" (no inputs), "effect" (side effects).
- optional lowering for the compiler: ``ufunc`` (the NumPy ufunc the forward is, called on the
  inputs alone), ``forward_out(*arrays, out, **attrs)`` (the forward writing into ``out``) and
  ``decompose(*tensors, **attrs)`` (the same value composed of primitives, for fusion).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np


class Spec(NamedTuple):
    """What inference knows of a value: its shape (``None`` for an unknown dim) and dtype."""

    shape: tuple
    dtype: np.dtype


class Op:
    """One primitive of the op table."""

    __slots__ = (
        "name",
        "forward",
        "infer",
        "vjp",
        "kind",
        "grad_name",
        "saves_output",
        "differentiable",
        "random",
        "backward_class",
        "ufunc",
        "forward_out",
        "decompose",
        "__dict__",
    )

    def __init__(
        self,
        name: str,
        forward: Callable,
        infer: Callable,
        vjp: Callable | None,
        kind: str = "opaque",
        grad_name: str | None = None,
        saves_output: bool = False,
        random: bool = False,
        ufunc: np.ufunc | None = None,
        forward_out: Callable | None = None,
        decompose: Callable | None = None,
    ):
        self.name = name
        self.forward = forward
        self.infer = infer
        self.vjp = vjp
        self.kind = kind
        self.grad_name = grad_name or _camel(name) + "Backward0"
        self.saves_output = saves_output
        self.differentiable = vjp is not None
        self.random = random
        self.backward_class = None  # filled in by autograd on first use
        self.ufunc = ufunc
        self.forward_out = forward_out if forward_out is not None else ufunc
        self.decompose = decompose

    def __repr__(self) -> str:
        return f"<op {self.name}>"


OPS: dict[str, Op] = {}


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def register(
    name: str,
    *,
    forward: Callable,
    infer: Callable,
    vjp: Callable | None = None,
    kind: str = "opaque",
    grad_name: str | None = None,
    saves_output: bool = False,
    random: bool = False,
    ufunc: np.ufunc | None = None,
    forward_out: Callable | None = None,
    decompose: Callable | None = None,
) -> Op:
    """Declare a primitive. Every op is declared exactly once."""
    if name in OPS:
        raise ValueError(f"op {name!r} is already declared")
    op = Op(name, forward, infer, vjp, kind, grad_name, saves_output, random, ufunc, forward_out,
            decompose)
    OPS[name] = op
    return op


def get(name: str) -> Op:
    return OPS[name]


def all_ops() -> dict[str, Op]:
    """The whole table, name -> Op (tests enumerate it)."""
    return dict(OPS)


Attrs = dict[str, Any]
