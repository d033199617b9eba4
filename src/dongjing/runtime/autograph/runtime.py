"""The runtime of converted code (`_dj_ag` in it): each construct decides when it runs, during
tracing, whether its condition is a Python value (plain Python: loops unroll, an untaken branch
is never traced) or a symbolic tensor (a `cond` / `while_loop` op, see graph_flow.py)."""

from __future__ import annotations

from ...graph import builder
from ...ops import gt, logical_and, logical_not, logical_or, lt, ne
from ...ops import where as select
from ...ops.convert import as_tensor
from ...tensor import Tensor
from . import graph_flow
from . import values as V
from .values import UNDEFINED, UNDEFINED_RETURN, ConversionError  # noqa: F401  (used by converted code)

# autograph.convert's converted_callable, set when it loads (it is built on this module)
converted_callable = None


def is_tensor(value) -> bool:
    """A condition that must become graph control flow: any Tensor while a graph is built."""
    return isinstance(value, Tensor) and (builder.state.graph is not None
                                          or value._node is not None)


def ld(thunk):
    """The current value of a variable (`lambda: x`), or UNDEFINED when it is unbound."""
    try:
        return thunk()
    except NameError:
        return UNDEFINED


def _named(state: tuple, names: tuple, where: str) -> tuple:
    out = []
    for name, value in zip(names, state):
        if value is UNDEFINED:
            value = V.Undefined(name, f"variable {name!r} is used at or after {where} but no "
                                "assignment to it ran before")
        out.append(value)
    return tuple(out)


def _no_context(ctx, construct: str, where: str) -> None:
    if ctx is not None:
        raise ConversionError(f"a tensor-dependent `{construct}` at {where} inside the {ctx}: the "
                         "graph cannot catch exceptions or run context managers per branch or "
                         "iteration; move the `try`/`with` inside the branch or loop body, or "
                         "outside the function")


def if_stmt(test, true_fn, false_fn, state: tuple, names: tuple, where: str, ctx=None):
    """`if test:` of converted code; returns the new values of `names`."""
    state = _named(state, names, where)
    if is_tensor(test):
        _no_context(ctx, "if", where)
        return graph_flow.graph_if(test, true_fn, false_fn, state, names, where)
    return tuple(true_fn(*state) if test else false_fn(*state))


def while_stmt(test, body, state: tuple, names: tuple, where: str, ctx=None):
    """`while test:` of converted code: Python iterations while the test is a Python value;
    from the first symbolic test on, one graph `while_loop`."""
    state = _named(state, names, where)
    while True:
        cond = test(*state)
        if is_tensor(cond):
            _no_context(ctx, "while", where)
            return graph_flow.graph_while(test, body, state, names, where)
        if not cond:
            return state
        state = tuple(body(*state))


class TensorRange:
    """`range(...)` with a tensor bound: iterated by a graph loop."""

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step


def range_(*args):
    """`range` of converted code: a Python range unless a bound is a tensor."""
    if not any(is_tensor(a) for a in args):
        return range(*args)
    if len(args) == 1:
        return TensorRange(0, args[0], 1)
    if len(args) == 2:
        return TensorRange(args[0], args[1], 1)
    return TensorRange(*args)


def for_stmt(iterable, extra_test, body, state: tuple, names: tuple, where: str, ctx=None):
    """`for x in iterable:`: Python iteration over Python iterables (a symbolic `break` makes
    the remaining iterations conditional); a graph loop over a tensor's first dimension or a
    range with tensor bounds."""
    state = _named(state, names, where)
    if isinstance(iterable, TensorRange) or is_tensor(iterable):
        _no_context(ctx, "for", where)
        return _graph_for(iterable, extra_test, body, state, names, where)
    for item in iterable:
        if extra_test is not None:
            go = extra_test(*state)
            if is_tensor(go):
                _no_context(ctx, "for", where)
                state = graph_flow.graph_if(go, lambda *s, i=item: body(i, *s), lambda *s: s,
                                            state, names, where)
                continue
            if not go:
                break
        state = tuple(body(item, *state))
    return state


def _graph_for(iterable, extra_test, body, state, names, where):
    if isinstance(iterable, TensorRange):
        start, stop, step = iterable.start, iterable.stop, iterable.step
        item = None
    else:
        if not iterable.shape or iterable.shape[0] is None:
            raise ConversionError(f"`for` at {where} iterates a tensor of shape "
                             f"{tuple(iterable.shape)}; its first dimension must be known")
        start, stop, step, item = 0, iterable.shape[0], 1, iterable
    counter = as_tensor(start) if not isinstance(start, Tensor) else start
    if counter.dtype.kind not in "iu":
        raise ConversionError(f"`for ... in range(...)` at {where}: the bounds must be "
                              f"integers, got {counter.dtype}")

    def test(i, *s):
        if isinstance(step, int):
            go = lt(i, stop) if step > 0 else gt(i, stop)
        else:
            go = select(gt(step, 0), lt(i, stop), gt(i, stop))
        if extra_test is not None:
            more = extra_test(*s)
            go = logical_and(go, graph_flow.as_bool(more, where)) if is_tensor(more) else (
                go if more else as_tensor(False))
        return go

    def step_body(i, *s):
        value = i if item is None else item[i]
        return (i + step,) + tuple(body(value, *s))

    out = graph_flow.graph_while(test, step_body, (counter,) + tuple(state),
                                 ("_dj_index",) + tuple(names), where)
    return out[1:]


def and_(*thunks):
    """`a and b and ...`: Python short-circuit on Python values, logical_and on tensors."""
    value = thunks[0]()
    for thunk in thunks[1:]:
        if is_tensor(value):
            other = thunk()
            value = logical_and(_bool(value), _bool(other)) if is_tensor(other) else (
                _bool(value) if other else other)
        elif not value:
            return value
        else:
            value = thunk()
    return value


def or_(*thunks):
    """`a or b or ...`: Python short-circuit on Python values, logical_or on tensors."""
    value = thunks[0]()
    for thunk in thunks[1:]:
        if is_tensor(value):
            other = thunk()
            value = logical_or(_bool(value), _bool(other)) if is_tensor(other) else (
                other if other else _bool(value))
        elif value:
            return value
        else:
            value = thunk()
    return value


def _bool(t):
    return t if t.dtype.kind == "b" else ne(t, 0)


def not_(value):
    """`not x`: logical_not of a tensor, Python `not` otherwise."""
    return logical_not(_bool(value)) if is_tensor(value) else not value


def if_exp(test, true_thunk, false_thunk, where: str):
    """`a if test else b`."""
    if is_tensor(test):
        (value,) = graph_flow.graph_if(test, lambda: (true_thunk(),), lambda: (false_thunk(),),
                                       (), ("<conditional expression>",), where)
        return value
    return true_thunk() if test else false_thunk()


def ret(value, where: str = "?"):
    """The value a converted function returns (None when it fell off its end)."""
    if value is UNDEFINED_RETURN:
        return None
    _check_defined(value)
    return value


def _check_defined(value) -> None:
    """Raise the recorded error of an undefined value anywhere in a returned structure."""
    if V.is_undefined(value):
        value._fail()
    if type(value) in (list, tuple):
        for v in value:
            _check_defined(v)
    elif type(value) is dict:
        for v in value.values():
            _check_defined(v)


def call(fn, *args, **kwargs):
    """A call in converted code: user functions and modules run converted too."""
    return converted_callable(fn)(*args, **kwargs)
