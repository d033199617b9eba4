"""dj.jit check mode: run a call eagerly and compiled on the same inputs, compare every output,
gradient and state change, and when they differ name the first diverging node.

Locating the node: a fresh trace of the function now stands for the eager run (its graph holds
the eager ops in the order they ran, with their source lines, and the O0 interpreter runs each
op's own forward). Its intermediates are matched by order, op and source line with those of
the cached trace: a difference there means the trace is stale (a Python value that changed, a
Python random number). Otherwise the cached graph is right and its compiled code is not: each
node is compiled alone at the trace's level and compared with the interpreter, and the report
names the optimization pass that last rewrote the first wrong node.
"""

from __future__ import annotations

import warnings

from ..autograd.api import grad as autograd_grad
from ..backends import backend_of, default_backend, numpy_backend
from ..devices.random import default as _rng
from ..dtypes import is_floating
from ..errors import CheckError
from ..ops import sum as dj_sum
from ..tensor import Tensor
from . import jit as _jit_module
from .fetch_structure import flatten
from .interpreter import Interpreter, needed_nodes
from .jit import JitFunction, jit
from .tracing import Trace

xp = numpy_backend.xp  # comparisons run on the host, on NumPy copies of the values

_TOLERANCE = {2: 1e-2, 4: 1e-4, 8: 1e-9}  # relative tolerance by float itemsize


def tolerance(dtype) -> float:
    """The relative (and, scaled by the values' size, absolute) tolerance for a dtype."""
    dtype = xp.dtype(dtype)
    floating = is_floating(dtype) or dtype.kind == "c"
    return _TOLERANCE.get(dtype.itemsize, 1e-4) if floating else 0.0


def errors(got, want) -> tuple[float, float] | None:
    """(max abs error, max rel error) of `got` against `want`; None when within tolerance.
    Differing shapes count as infinitely wrong."""
    got, want = _host(got), _host(want)
    if got.shape != want.shape:
        return float("inf"), float("inf")
    if not (is_floating(want.dtype) or want.dtype.kind == "c"):
        bad = got != want
        return (float(xp.max(xp.abs(got.astype(float) - want.astype(float)))), 1.0) \
            if xp.any(bad) else None
    g, w = got.astype(xp.float64), want.astype(xp.float64)
    both_nan = xp.isnan(g) & xp.isnan(w)
    same_inf = xp.isinf(g) & (g == w)
    diff = xp.where(both_nan | same_inf, 0.0, xp.abs(g - w))
    diff = xp.where(xp.isnan(diff), xp.inf, diff)
    if diff.size == 0:
        return None
    tol = tolerance(want.dtype)
    scale = max(1.0, float(xp.max(xp.abs(xp.where(xp.isfinite(w), w, 0.0)))))  # w not empty
    if xp.all(diff <= tol * xp.abs(w) + tol * scale):
        return None
    rel = diff / xp.maximum(xp.abs(w), xp.finfo(xp.float64).tiny)
    return float(xp.max(diff)), float(xp.max(rel))


def _host(value):
    """`value` as a NumPy array (a copy when another backend holds it)."""
    if isinstance(value, Tensor):
        value = value._data
    return backend_of(value).to_numpy(value) if hasattr(value, "dtype") else xp.asarray(value)


class _State:
    """The captured tensors' values and .grad, and the random generator, at one moment."""

    def __init__(self, tensors: list):
        self.tensors = tensors
        self.values = [t._data.copy() for t in tensors]
        self.grads = [None if t._grad is None else t._grad._data.copy() for t in tensors]
        self.rng = _rng.rng.bit_generator.state

    def restore(self) -> None:
        for t, value, grad in zip(self.tensors, self.values, self.grads):
            if t._data.shape == value.shape:
                t._data[...] = value
            else:
                t._data = value.copy()
            t._grad = None if grad is None else Tensor._make(grad.copy())
        _rng.rng.bit_generator.state = self.rng


def check_call(jitted, trace, args: tuple, kwargs: dict, arrays: list, tensors: list,
               mode) -> object:
    """Run one call both ways, compare, and return the compiled result (raise `CheckError`,
    or warn when `mode == "warn"`, on a difference)."""
    captured = [t for t, _ in trace.graph._captured.values()]
    before = _State(captured)
    weights: list = []
    eager_out, eager_grads = _eager(jitted.fn, args, kwargs, trace, tensors, weights)
    eager_state = _State(captured)
    before.restore()
    out, grads = _compiled(trace, arrays, tensors, weights)
    problems = _compare(eager_out, out, "output")
    problems += _compare(eager_grads, grads, "gradient of")
    problems += _compare_state(eager_state, _State(captured))
    if not problems:
        return out
    after = _State(captured)
    before.restore()
    try:
        where = locate(jitted, trace, args, kwargs, arrays, weights, before)
    finally:
        after.restore()
    message = (f"dj.jit check: compiled {jitted.name}() differs from eager: "
               f"{'; '.join(problems[:3])}\n{where}")
    if mode == "warn":
        warnings.warn(message, UserWarning, stacklevel=4)
        return out
    raise CheckError(message)


def _grad_inputs(trace, tensors: list) -> list:
    """What gradients are compared for: none when the function runs backward() itself (its
    parameters' .grad is compared as state instead)."""
    found: list = []
    if not trace.differentiable:
        return found
    for kind, _node, ref in trace.grad_candidates:
        t = tensors[ref] if kind == "arg" else ref
        if t is not None and t.requires_grad and all(t is not f for f in found):
            found.append(t)
    return found


def _weighted_sum(outs: list, weights: list):
    """sum(out * w) over the floating outputs with history; fixed random weights (made on the
    first use, reused for the compiled run)."""
    total = None
    k = 0
    for o in outs:
        if not (isinstance(o, Tensor) and o.requires_grad and is_floating(o._data.dtype)):
            continue
        if k == len(weights):
            rng = backend_of(o._data).generator(len(weights))
            weights.append(rng.uniform(0.5, 1.5, o._data.shape).astype(o._data.dtype))
        term = dj_sum(o * Tensor._make(weights[k]))
        total = term if total is None else total + term
        k += 1
    return total


def _grads(outs: list, inputs: list, weights: list, retain: bool) -> list:
    loss = _weighted_sum(outs, weights)
    if loss is None or not inputs:
        return []
    got = autograd_grad(loss, inputs, retain_graph=retain, allow_unused=True)
    return [None if g is None else g._data for g in got]


def _leaves(value) -> list:
    leaves: list = []
    flatten(value, leaves, lambda v: isinstance(v, Tensor))
    return leaves


def _eager(fn, args, kwargs, trace, tensors, weights):
    out = fn(*args, **kwargs)
    outs = _leaves(out)
    grads = _grads(outs, _grad_inputs(trace, tensors), weights, retain=False)
    return [o._data for o in outs], grads


def _compiled(trace, arrays, tensors, weights):
    out = trace.run(arrays, tensors)
    outs = _leaves(out)
    grads = _grads(outs, _grad_inputs(trace, tensors), weights, retain=True)
    return out, grads


def _compare(want: list, got, what: str) -> list:
    got = [o._data for o in _leaves(got)] if not isinstance(got, list) else got
    if len(want) != len(got):
        return [f"{len(got)} {what}s compiled, {len(want)} eagerly"]
    problems = []
    for i, (w, g) in enumerate(zip(want, got)):
        if (w is None) != (g is None):
            problems.append(f"{what} {i}: None on one side only")
        elif w is not None and (err := errors(g, w)) is not None:
            problems.append(f"{what} {i}: max abs err {err[0]:.3g}, max rel err {err[1]:.3g}")
    return problems


def _compare_state(eager: _State, compiled: _State) -> list:
    problems = []
    for t, we, wc, ge, gc in zip(eager.tensors, eager.values, compiled.values, eager.grads,
                                 compiled.grads):
        name = getattr(t, "var_name", None) or f"tensor {tuple(t.shape)}"
        if (err := errors(wc, we)) is not None:
            problems.append(f"{name} after the call: max abs err {err[0]:.3g}")
        if (ge is None) != (gc is None) or (ge is not None and errors(gc, ge) is not None):
            problems.append(f".grad of {name} after the call differs")
    return problems


# --- locating the first diverging node ------------------------------------------------------
def locate(jitted, trace, args, kwargs, arrays, weights, state: _State) -> str:
    """A report naming the first node whose value differs, and why (see the module doc)."""
    fresh = Trace(jitted._traced_fn(), args, kwargs, jitted.name, 0)
    state.restore()
    eager = _interpret(fresh, fresh.fetches, _feeds(fresh, arrays, []))
    state.restore()
    forward = trace.fetches
    feeds = _feeds(trace, arrays, weights)
    traced = _interpret(trace, forward, feeds)
    state.restore()
    report = _first_stale(eager, traced, trace)
    if report is not None:
        return report
    nodes = forward + _gradient_nodes(trace)
    reference = _interpret(trace, nodes, feeds)
    return _first_miscompiled(trace, reference, feeds, state)


def _feeds(trace, arrays: list, weights: list) -> dict:
    """Values for the placeholders of a trace's graph: arguments, .grad inputs, output seeds."""
    values = {n: arrays[i] for i, n in enumerate(trace.placeholders)}
    for p, node in trace.grad_inputs:
        if p._grad is not None:
            values[node] = p._grad._data
    for plan in trace.grad_plans.values():
        for node, w in zip(plan.seed_nodes, weights):
            values[node] = default_backend().asarray(w, node.dtype)
    return values


def _gradient_nodes(trace) -> list:
    nodes = []
    for plan in trace.grad_plans.values():
        nodes += plan.grad_nodes
    return nodes


def _ops(trace, fetches) -> list:
    return [n for n in needed_nodes(fetches, set())
            if n.op.kind not in ("source", "effect") and n.dtype is not None]


def _interpret(trace, fetches, feeds: dict) -> dict:
    """Every op node's value under the O0 interpreter (each op's own forward)."""
    nodes = _ops(trace, fetches)
    placeholders = [n for n in needed_nodes(fetches, set()) if n.op.name == "placeholder"]
    program = Interpreter(trace.graph, nodes, placeholders)
    values = program([feeds[n] for n in placeholders])
    return dict(zip(nodes, values))


def _describe(node, err, values: dict | None = None) -> str:
    shapes = ", ".join(str(tuple(i.shape)) for i in node.inputs)
    text = (f"first diverging node: %{node.name} = {node.op.name}({shapes}) -> "
            f"{tuple(node.shape)} at {node.source or '?'}")
    if err is not None:
        text += f"; max abs err {err[0]:.3g}, max rel err {err[1]:.3g}"
    return text


def _first_stale(eager: dict, traced: dict, trace) -> str | None:
    pairs = list(zip(eager, traced))
    for e, t in pairs:
        if e.op.name != t.op.name or e.source != t.source:
            return (f"the function now runs {e.op.name} at {e.source} where the trace has "
                    f"{t.op.name} at {t.source}: it took another path than when traced "
                    f"(a Python value or condition changed){_effects(trace, t)}")
        err = errors(traced[t], eager[e])
        if err is not None:
            return (_describe(t, err) + "\ncause: the traced graph is stale here (eager "
                    "computes something else now: a Python value read while tracing changed, "
                    f"or a Python random number){_effects(trace, t)}")
    if len(eager) != len(traced):
        return "the function now runs a different number of ops than when traced"
    return None


def _effects(trace, node) -> str:
    here = [e for e in getattr(trace, "side_effects", []) if e.where == node.source]
    if not here:
        return ""
    return "\nlogged while tracing at that line: " + "; ".join(str(e) for e in here)


def _first_miscompiled(trace, reference: dict, feeds: dict, state: _State) -> str:
    for node, want in reference.items():
        placeholders = [n for n in needed_nodes([node], set()) if n.op.name == "placeholder"]
        program = trace.session._program([node], placeholders)
        state.restore()
        got = program([feeds[n] for n in placeholders])[0]
        err = errors(got, want)
        if err is not None:
            return (_describe(node, err) + "\ncause: the compiled code (optimize="
                    f"{trace.session.optimize}) computes it wrongly; last rewritten by pass "
                    f"{_last_pass(program.stats, node)}")
    return ("no single node differs when compiled alone: the difference comes from running "
            "the nodes together (buffer reuse or fusion across them)")


def _last_pass(stats: list, node) -> str:
    mark = f"%{node.name}"
    last = None
    for entry in stats:
        if any(mark in str(change) for change in entry.get("changes", ())):
            last = entry["pass"]
    return last or "none (no pass reported a change to it; see fn.source(...))"


def check(fn, *args, **kwargs):
    """Run `fn` eagerly and compiled (by dj.jit) on these arguments, compare outputs and
    gradients, and return the compiled result; raises `CheckError` naming the first diverging
    node when they differ.

    >>> dj.check(lambda x: dj.tanh(x) * 2, dj.ones(3))
    tensor([1.5231884, 1.5231884, 1.5231884])
    """
    jitted = fn if isinstance(fn, JitFunction) else jit(fn)
    return jitted.checked_call(args, kwargs, mode=True)


_jit_module._check_mode.check_call = check_call  # JitFunction.checked_call runs through it
