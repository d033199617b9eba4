"""The op record and the op table: every primitive declared once, used by every executor.

One `define(...)` call states all an op's facts:

- ``forward``: the array computation, written against a backend namespace ``xp`` as
  ``forward(xp, *arrays, **attrs)``; or ``ufunc="exp"`` when the op *is* that universal
  function of the array library (the forward, the compiler's lowering and ``out=`` writes are
  then all derived from that one name).
- ``infer(*specs, **attrs) -> (shape, dtype)``: the only statement of the op's dtype and shape
  rule. Graph building calls it; eager dispatch checks every result's dtype against it.
- ``grads``: one rule per input, ``rule(g, *inputs, **attrs)`` written with dongjing ops (so it
  runs eagerly, builds graph nodes and is itself differentiable). A rule that takes an ``out``
  keyword receives the op's output (the op then keeps it for backward). The engines reduce a
  broadcast gradient to its input's shape and skip inputs that need none; rules never do.
  ``vjp(g, inputs, out, needs, attrs)`` is the whole-op escape hatch for variadic and control
  ops.
- ``decompose``: the same value as a composition of primitives (for the compiler's fusion);
  ``decompose="forward"`` derives it from the forward itself, run with ``xp`` = dongjing's ops,
  so a derivative needed both eagerly (one pass) and fused is written once.
- ``kind`` (`Kind`), and for elementwise ops the fusion ``cost`` (`Cost`); ``kernel`` (a
  `Kernel`) is an op's scalar formulation inside compiled fused kernels, where calling its
  ufunc per element would be slow (a `Cost.TRANSCENDENTAL` op with one fuses on its dtypes).
- Algebraic facts, which the compiler's simplification reads (each exact bit for bit for every
  input, NaN, inf and -0.0 included): ``identity`` is the right unit element e, f(x, e) = x
  (a float zero's sign counts: x + (-0.0) = x, but -0.0 + 0.0 = +0.0); ``commutative`` says
  f(a, b) = f(b, a), so a unit (or absorbing element) on the left counts too; ``absorbing``
  is the element z with f(x, z) = z for every integer and bool x (floats have none: NaN * 0 is
  NaN); ``mask_operand`` says a bool operand computes as its 0/1 cast to the other operand's
  float dtype (so the compiler drops the cast).
- ``onnx``: how the op exports, stated only here: an ONNX op type (``"Tanh"``), an `Onnx`
  record (type, attribute map, input casts) or a rule ``rule(e, node, ins)`` emitting nodes
  through the exporter's `Emitter` `e` (see `dongjing.ops.onnx_rules`); ``None`` with
  ``onnx_reason`` for ops that cannot export.
- ``public`` / ``methods``: the names under which the op's user-facing function is published
  as ``dj.<name>`` and as ``Tensor.<name>``; ``binding`` is the policy that generates that
  function (`dongjing.ops.bindings`), or `bind` attaches a hand-written one. A method name in
  PyTorch's in-place form (``"tanh_"``, ``"mul_"``, or an augmented assignment such as
  ``"__imul__"``) is the op's in-place variant: the generated method writes the result into the
  tensor's own memory (`is_inplace_name`).

This module is a leaf: it imports only NumPy and the error module, so every other layer may
import it.
"""

from __future__ import annotations

import enum
import functools
import inspect
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import numpy

from ..errors import DongjingError
from . import late


class Spec(NamedTuple):
    """What inference knows of a value: its shape (``None`` for an unknown dim) and dtype."""

    shape: tuple
    dtype: Any


class Onnx(NamedTuple):
    """A direct ONNX export: one node of `op_type`.

    `attrs` maps ONNX attribute -> dongjing attribute name; `cast` is "out" (inputs cast to the
    output dtype), "common" (to their promoted dtype) or None.
    """

    op_type: str
    attrs: dict = {}
    cast: str | None = None


class Kernel(NamedTuple):
    """An elementwise op's formulation inside compiled fused kernels.

    `lines` are scalar Python statements computing step ``t{j}`` from the input expression
    ``{x}`` (``str.format`` fills both); they may call ``_f64`` and ``_f32`` (conversions to
    float64 and float32) and Python's ``min``, ``max`` and ``abs``. `dtypes` names the dtypes
    (``"float32"``) on which the lines are as accurate as the op's own forward.
    """

    dtypes: tuple
    lines: tuple


class Kind(str, enum.Enum):
    """What the executors and passes may assume about an op."""

    ELEMENTWISE = "elementwise"  # output shape = broadcast of the inputs; fusable per element
    REDUCE = "reduce"            # folds one or more dims
    SHAPE = "shape"              # a value computed from shapes only (folds at build time)
    OPAQUE = "opaque"            # anything else computed from its inputs
    SOURCE = "source"            # no inputs: placeholders, variables, constants, sub-graph args
    EFFECT = "effect"            # writes state (assign) or orders effects (group)
    CONTROL = "control"          # runs sub-graphs (cond, while_loop); outputs a tuple
    FUSED = "fused"              # a kernel made by the compiler from elementwise ops

    def __str__(self) -> str:
        return self.value


class Cost(enum.Enum):
    """Fusion class of an elementwise op: how a fused kernel may treat it."""

    CHEAP = "cheap"                    # one or two machine instructions: always worth fusing
    TRANSCENDENTAL = "transcendental"  # exp, log, ...: fused only with a `Kernel` formulation


@dataclass(frozen=True, eq=False, slots=True)
class Op:
    """One primitive of the op table. Build it with `define`, never directly."""

    name: str
    forward: Callable  # NumPy-bound: forward(*arrays, **attrs)
    infer: Callable
    vjp: Callable | None
    kind: Kind = Kind.OPAQUE
    cost: Cost | None = None
    kernel: Kernel | None = None
    identity: Any = None
    absorbing: Any = None
    commutative: bool = False
    mask_operand: bool = False
    ufunc: Any = None  # the NumPy ufunc object, when the op is one
    ufunc_name: str | None = None
    impl: Callable | None = None  # the backend-generic forward(xp, *arrays, **attrs)
    forward_out: Callable | None = None
    decompose: Callable | None = None
    grad_name: str = ""
    saves_output: bool = False
    random: bool = False
    keeps_dtype: bool = False  # the result has the first input's dtype, whatever the attrs
    onnx: Any = None
    onnx_reason: str | None = None
    public: tuple = ()
    methods: tuple = ()
    binding: Callable | None = None
    doc: str = ""
    cache: dict = field(default_factory=dict, repr=False)  # derived, per process
    dtype_rules: dict = field(default_factory=dict, repr=False)  # input dtypes+attrs -> dtype
    # the dtype verdict of the latest attribute-free two-input call, `(dtype_a, dtype_b,
    # result)`, checked by identity before `dtype_rules` (a binary op mostly sees one pair)
    backward_class: type | None = field(default=None, repr=False)  # made on first record
    last_rule: list = field(default_factory=lambda: [(None, None, None)], repr=False)

    @property
    def differentiable(self) -> bool:
        return self.vjp is not None

    def forward_for(self, xp) -> Callable:
        """The forward bound to the array namespace `xp` (cached per namespace)."""
        key = ("forward", id(xp))
        fn = self.cache.get(key)
        if fn is None:
            if self.ufunc_name is not None:
                fn = getattr(xp, self.ufunc_name)
            elif self.impl is not None:
                fn = functools.partial(self.impl, xp)
            else:
                fn = self.forward
            self.cache[key] = fn
        return fn

    def __repr__(self) -> str:
        return f"<op {self.name}>"


OPS: dict[str, Op] = {}


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _wants_out(rule: Callable) -> bool:
    try:
        return "out" in inspect.signature(rule).parameters
    except (TypeError, ValueError):
        return False


def rules_vjp(op_name: str, grads: tuple) -> tuple[Callable, bool]:
    """A whole-op vjp from per-input rules, and whether any rule reads the op's output."""
    wants = tuple(rule is not None and _wants_out(rule) for rule in grads)
    if len(grads) == 2 and not any(wants):
        vjp = _binary_rules_vjp(*grads)
    elif len(grads) == 1 and grads[0] is not None:
        vjp = _unary_rule_vjp(grads[0], wants[0])
    else:
        def vjp(g, inputs, out, needs, attrs):
            results = []
            for rule, want, need in zip(grads, wants, needs):
                if rule is None or not need:
                    results.append(None)
                elif want:
                    results.append(rule(g, *inputs, out=out, **attrs))
                else:
                    results.append(rule(g, *inputs, **attrs))
            return tuple(results)

    vjp.__qualname__ = f"{op_name}_vjp"
    return vjp, any(wants)


def _unary_rule_vjp(rule: Callable, wants_out: bool) -> Callable:
    """The vjp of a one-input op (the eager backward's hot path: unary ops, reductions)."""
    if wants_out:
        def vjp(g, inputs, out, needs, attrs):
            if not needs[0]:
                return (None,)
            return (rule(g, inputs[0], out=out, **attrs) if attrs else rule(g, inputs[0], out=out),)
    else:
        def vjp(g, inputs, out, needs, attrs):
            if not needs[0]:
                return (None,)
            return (rule(g, inputs[0], **attrs) if attrs else rule(g, inputs[0]),)
    return vjp


def _binary_rules_vjp(rule_a: Callable | None, rule_b: Callable | None) -> Callable:
    """The vjp of a two-input op whose rules do not read its output: the eager backward's hot
    path (binary arithmetic, matmul, ...), so it avoids the general loop."""

    def vjp(g, inputs, out, needs, attrs):
        a, b = inputs
        if attrs:
            return (rule_a(g, a, b, **attrs) if needs[0] and rule_a is not None else None,
                    rule_b(g, a, b, **attrs) if needs[1] and rule_b is not None else None)
        return (rule_a(g, a, b) if needs[0] and rule_a is not None else None,
                rule_b(g, a, b) if needs[1] and rule_b is not None else None)

    return vjp


def define(
    name: str,
    *,
    infer: Callable[..., object],
    forward: Callable[..., object] | None = None,
    ufunc: str | None = None,
    grads: tuple[Callable[..., object] | None, ...] | None = None,
    vjp: Callable[..., object] | None = None,
    kind: Kind | str = Kind.OPAQUE,
    cost: Cost | None = None,
    kernel: Kernel | None = None,
    identity: Any = None,
    absorbing: Any = None,
    commutative: bool = False,
    mask_operand: bool = False,
    grad_name: str | None = None,
    saves_output: bool = False,
    random: bool = False,
    keeps_dtype: bool = False,
    forward_out: Callable[..., object] | None = None,
    decompose: Callable[..., object] | str | None = None,
    onnx: Any = None,
    onnx_reason: str | None = None,
    public: tuple[str, ...] | str = (),
    methods: tuple[str, ...] | str = (),
    binding: Callable[..., object] | None = None,
    doc: str = "",
    table: bool = True,
) -> Op:
    """Declare a primitive: one call holds every fact about it (see the module docstring).

    `forward` is ``forward(xp, *arrays, **attrs)``; pass `ufunc` instead when the op is a
    universal function of the array library. Give `grads` (one rule per input) or, for
    variadic and control ops, `vjp`; neither means the op is not differentiable.
    `keeps_dtype` (movement ops: reshape, permute, indexing) states that the result has the
    first input's dtype whatever the attributes; `infer` is held to it, and eager dispatch
    then needs no dtype lookup per attribute combination.
    """
    if table and name in OPS:
        raise DongjingError(f"op {name!r} is already declared")
    if (forward is None) == (ufunc is None):
        raise DongjingError(f"op {name!r}: give exactly one of forward= and ufunc=")
    if grads is not None and vjp is not None:
        raise DongjingError(f"op {name!r}: give grads= (per input) or vjp=, not both")
    np_ufunc = None
    if ufunc is not None:
        np_ufunc = getattr(numpy, ufunc, None)
        if not isinstance(np_ufunc, numpy.ufunc):
            raise DongjingError(f"op {name!r}: {ufunc!r} is not a universal function")
        bound = np_ufunc
        impl = None
    else:
        impl = forward
        bound = functools.partial(forward, numpy)
        functools.update_wrapper(bound, forward)
    if decompose == "forward":  # the forward, run on Tensors through dj's ops, is the definition
        if impl is None:
            raise DongjingError(f"op {name!r}: decompose='forward' needs a forward(xp, ...)")
        decompose = _forward_as_composite(impl)
    if grads is not None:
        vjp, reads_out = rules_vjp(name, tuple(grads))
        saves_output = saves_output or reads_out
    if keeps_dtype:
        infer = _holding_dtype(name, infer)
    op = Op(
        name=name,
        forward=bound,
        infer=infer,
        vjp=vjp,
        kind=Kind(kind),
        cost=cost,
        kernel=kernel,
        identity=identity,
        absorbing=absorbing,
        commutative=commutative,
        mask_operand=mask_operand,
        ufunc=np_ufunc,
        ufunc_name=ufunc,
        impl=impl,
        forward_out=(functools.partial(forward_out, numpy) if forward_out is not None
                     else np_ufunc),
        decompose=decompose,
        grad_name=grad_name or _camel(name) + "Backward0",
        saves_output=saves_output,
        random=random,
        keeps_dtype=keeps_dtype,
        onnx=onnx,
        onnx_reason=onnx_reason,
        public=(public,) if isinstance(public, str) else tuple(public),
        methods=(methods,) if isinstance(methods, str) else tuple(methods),
        doc=doc,
    )
    if table:  # table=False: an op of one extension (dj.autograd.Function), not in the table
        OPS[name] = op
    if binding is not None:
        binding(op)  # a policy from dongjing.ops.bindings: publishes op.binding (and notifies)
    return op


def _holding_dtype(name: str, infer: Callable) -> Callable:
    """`infer` checked against `keeps_dtype`: a rule that gives another dtype is a bug."""

    @functools.wraps(infer)
    def checked(x, *rest, **attrs):
        result = infer(x, *rest, **attrs)
        if isinstance(result, tuple) and len(result) == 2 and result[1] != x.dtype:
            raise DongjingError(f"internal: op {name!r} declares keeps_dtype but its rule gives "
                                f"{result[1]} for a {x.dtype} input")
        return result

    return checked


_LISTENERS: list = []


def on_bind(listener: Callable[[Op], None]) -> None:
    """Call `listener(op)` whenever an op of the table gets its binding from now on (the Tensor
    methods of an op declared after ``import dongjing`` are attached this way)."""
    _LISTENERS.append(listener)


# augmented assignments (x *= y): in-place by the language's definition (`operator` lists
# each beside its binary operator, __imul__ beside __mul__)
_AUGMENTED = frozenset(n for n in dir(operator) if n.startswith("__i") and f"__{n[3:]}" in
                       dir(operator))


def is_inplace_name(name: str) -> bool:
    """Whether a method name declared in ``methods=`` is an in-place variant: PyTorch's
    trailing underscore (``tanh_``) or an augmented assignment (``__imul__``)."""
    return name in _AUGMENTED or (name.endswith("_") and not name.startswith("__"))


def _forward_as_composite(impl: Callable) -> Callable:
    """`impl(xp, ...)` evaluated with `xp` = dongjing's ops on Tensors: the op's composition of
    primitives, derived from its one forward (so a fused kernel and the eager op agree)."""

    def decompose(*tensors, **attrs):
        return impl(late.ops, *tensors, **attrs)  # ops are built on this module: a late slot

    return decompose


_F = TypeVar("_F", bound=Callable[..., object])


def bind(op: Op, function: _F) -> _F:
    """Make `function` the op's user-facing binding (published under ``op.public``)."""
    object.__setattr__(op, "binding", function)
    if not function.__doc__ and op.doc:
        function.__doc__ = op.doc
    if OPS.get(op.name) is op:
        for listener in _LISTENERS:
            listener(op)
    return function


def binds(op: Op) -> Callable[[_F], _F]:
    """Decorator form of `bind`: ``@binds(_pow)`` above the hand-written ``def pow(...)``."""
    return functools.partial(bind, op)


def register(name: str, *, forward: Callable, infer: Callable, vjp: Callable | None = None,
             ufunc: Any = None, **facts) -> Op:
    """Declare an op whose forward is already bound to NumPy (``forward(*arrays, **attrs)``).

    For ops whose forward cannot run on another backend (effects, sources, control flow);
    new ops should use `define`.
    """
    if ufunc is not None and not isinstance(ufunc, str):
        ufunc = ufunc.__name__
    numpy_out = facts.pop("forward_out", None)
    if numpy_out is not None:
        facts["forward_out"] = lambda xp, *a, **k: numpy_out(*a, **k)
    if ufunc is not None and getattr(numpy, ufunc, None) is forward:
        return define(name, ufunc=ufunc, infer=infer, vjp=vjp, **facts)
    op = define(name, forward=lambda xp, *a, **k: forward(*a, **k), infer=infer, vjp=vjp,
                **facts)
    object.__setattr__(op, "forward", forward)
    object.__setattr__(op, "impl", None)
    if ufunc is not None:
        np_ufunc = getattr(numpy, ufunc)
        object.__setattr__(op, "ufunc", np_ufunc)
        if numpy_out is None:
            object.__setattr__(op, "forward_out", np_ufunc)
    return op


def get(name: str) -> Op:
    return OPS[name]


def all_ops() -> dict[str, Op]:
    """The whole table, name -> Op (tests enumerate it)."""
    return dict(OPS)


Attrs = dict[str, Any]
