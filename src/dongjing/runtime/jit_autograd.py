"""A jitted function as one differentiable op of the eager tape (AOTAutograd-style).

When a call needs gradients, the trace's graph gets its symbolic gradient (`dj.gradients`, the
same vjp rules the tape runs) and is split in two compiled programs: the forward, which also
returns the intermediates the gradient reads, and the backward, which takes those instead of
recomputing them. Both are built once per trace and per set of inputs needing a gradient. The
outputs carry a `JitBackward0` node the eager engine runs like any other op's.
"""

from __future__ import annotations

import itertools
import math
import weakref

from ..autograd.function import BackwardNode, accumulator_of
from ..autograd.grad_mode import state as grad_state
from ..backends import default_backend, is_array
from ..errors import DongjingError, JitError
from ..graph.builder import placeholder, to_node
from ..graph.gradients import _float_reachable, gradients
from ..graph.program import storage
from ..tensor import Tensor
from ..tensor import ndarray as _ndarray
from .interpreter import needed_nodes


class JitBackward0(BackwardNode):
    """The tape node of one call of a jitted function: its edges lead to the tensor arguments
    and captured tensors that require grad; running it runs the compiled backward program."""

    __slots__ = ()


class JitOutputBackward0(BackwardNode):
    """The tape node of one output of a jitted function with several differentiable outputs:
    it packs its gradient into the slot of that output and passes it to the call's
    JitBackward0 (so the eager engine sums the outputs' gradients before the backward runs)."""

    __slots__ = ()


class _NodeOp:
    """What the engine asks of a node's `op`: a name, `saves_output` and `vjp`."""

    saves_output = False

    def __init__(self, name: str, vjp):
        self.name = name
        self.vjp = vjp


class GradPlan:
    """The forward and backward programs of one trace for one set of inputs needing grad.

    `wrt`: indices into `trace.grad_candidates` (tensor arguments then captured tensors).
    """

    def __init__(self, trace, wrt: tuple):
        graph = trace.graph
        self.wrt = wrt
        self.backend = trace.where.backend or default_backend()  # where its programs run
        out_nodes = trace.fetches[:trace.n_out]
        effects = trace.fetches[trace.n_out:]
        x_nodes = [trace.grad_candidates[i][1] for i in wrt]
        reach = _float_reachable(list(graph.nodes), set(x_nodes))
        self.diff_outs = [i for i, n in enumerate(out_nodes) if n in reach]
        forward = out_nodes + effects
        fwd_set = set(needed_nodes(forward, set()))
        with graph.as_default():
            seeds = [placeholder(out_nodes[i].shape, out_nodes[i].dtype, name="grad_out")
                     for i in self.diff_outs]
            ys = [Tensor._symbolic(out_nodes[i]) for i in self.diff_outs]
            xs = [Tensor._symbolic(n) for n in x_nodes]
            grads = gradients(ys, xs, seeds) if ys else [None] * len(xs)
            self.has_grad = [g is not None for g in grads]
            grad_nodes = [to_node(graph, g) for g in grads if g is not None]
        assigned = {n.inputs[0] for n in effects if n.op.name == "assign"}
        boundary = [n for n in needed_nodes(grad_nodes, fwd_set) if n in fwd_set]
        fwd_placeholders = [n for n in needed_nodes(forward, set()) if n.op.name == "placeholder"]
        fed_index = {n: i for i, n in enumerate(fwd_placeholders)}
        # a view is saved as the value it views (the backward recomputes the view for free):
        # the forward returns a value of its own run as it is, but must copy a view of one
        saved = list(dict.fromkeys(_view_root(n) for n in boundary
                                   if not _recomputable(n, assigned)))
        # what the backward reads of the forward graph besides the saved values
        reads = needed_nodes(grad_nodes, set(saved))
        self.variables = [n.attrs["ref"] for n in reads if n.op.name == "variable"]
        # backward feeds, in graph order: seeds, saved intermediates, forward placeholders
        seed_nodes = self.seed_nodes = [s._node for s in seeds]
        self.grad_nodes = grad_nodes
        bwd_feeds = sorted(set(seed_nodes) | set(saved) |
                           {n for n in reads if n.op.name == "placeholder"},
                           key=lambda n: n.id)
        self.backward = trace.session._program(grad_nodes, bwd_feeds)
        # the forward returns only what the compiled backward still reads (its passes may
        # have simplified some uses away: an unread value would cost a copy per call)
        live = {n for n, kept in zip(bwd_feeds, self.backward.feed_nodes) if kept is not None}
        saved = [n for n in saved if n in live]
        self.forward = trace.session._program(forward + saved, fwd_placeholders)
        self.n_forward = len(forward)
        saved_index = {n: i for i, n in enumerate(saved)}
        seed_index = {n: i for i, n in enumerate(seed_nodes)}
        self.bwd_sources = [("seed", seed_index[n]) if n in seed_index else
                            ("saved", saved_index[n]) if n in saved_index else
                            ("fed", fed_index[n]) if n in live else
                            ("none", 0) for n in bwd_feeds]
        self.out_dtypes = [out_nodes[i].dtype for i in self.diff_outs]


_VIEWS = frozenset({"reshape", "permute", "expand", "unsqueeze", "squeeze"})


def _view_root(node):
    """The value a chain of view ops (reshape, permute, ...) starts from."""
    while node.op.name in _VIEWS and len(node.inputs) == 1:
        node = node.inputs[0]
    return node


def _recomputable(node, assigned: set) -> bool:
    """Cheaper for the backward to recompute than for the forward to return: inputs, unchanged
    Variables, constants and views of them (a transposed weight would be returned as a copy)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.op.name in ("constant", "placeholder") or (
                n.op.name == "variable" and n not in assigned):
            continue
        if n.op.name not in _VIEWS:
            return False
        stack.extend(n.inputs)
    return True


def differentiable_call(trace, tensors: list, arrays: list):
    """Run `trace` as a tape op when gradients are wanted; None when they are not (then the
    caller runs the plain forward program).

    `tensors`: the call's tensor arguments, in the order of `arrays` (None for NumPy arrays).
    """
    if not grad_state.grad_enabled or not trace.differentiable:
        return None
    wanted = []
    for i, (kind, _n, ref) in enumerate(trace.grad_candidates):
        t = tensors[ref] if kind == "arg" else ref
        if t is not None and t.requires_grad:
            wanted.append(i)
    if not wanted:
        return None
    wrt = tuple(wanted)
    plan = trace.grad_plans.get(wrt)
    if plan is None:
        try:
            plan = GradPlan(trace, wrt)
        except DongjingError as exc:
            note = (f" [raised while dj.jit built the gradient of {trace.name}(), because an "
                    "input requires grad; under dj.no_grad() it runs without one]")
            if exc.args and isinstance(exc.args[0], str) and note not in exc.args[0]:
                exc.args = (exc.args[0] + note,) + exc.args[1:]
            raise
        trace.grad_plans[wrt] = plan
    if not plan.diff_outs:
        return None
    return _run(trace, plan, tensors, arrays)


def _run(trace, plan: GradPlan, tensors: list, arrays: list):
    feed = trace.feed_arrays(arrays)
    values = trace.write_grads(plan.forward(feed))
    n = trace.n_out
    saved = values[plan.n_forward:]
    inputs = []
    for i in plan.wrt:
        kind, _n, ref = trace.grad_candidates[i]
        inputs.append(tensors[ref] if kind == "arg" else ref)
    attrs = {
        "plan": plan,
        "variables": [(v, v._version[0]) for v in plan.variables],
        "name": trace.name,
        "specs": [(_shape(values[i]), plan.out_dtypes[k]) for k, i in enumerate(plan.diff_outs)],
    }
    core = _tape_node(JitBackward0, _JIT_OP, inputs, attrs)
    # kept where the engine drops saved data after a backward without retain_graph
    core.out_data = {"saved": saved, "fed": feed}
    attrs["node"] = weakref.ref(core)
    outs = [Tensor._make(v) for v in values[:n]]
    if len(plan.diff_outs) == 1:
        out = outs[plan.diff_outs[0]]
        out.requires_grad = True
        out.grad_fn = core
    else:
        _attach_outputs(core, plan, outs, attrs["specs"])
    return trace.rebuild(outs)


def _shape(value) -> tuple:
    return tuple(getattr(value, "shape", ()))


def _tape_node(cls, op: _NodeOp, inputs: list, attrs: dict) -> BackwardNode:
    node = cls.__new__(cls)
    node.op = op
    node.attrs = attrs
    node.inputs = tuple(inputs)
    node.versions = tuple(t._version[0] for t in inputs)
    node.next_functions = tuple(
        (t.grad_fn or getattr(t, "_accumulator", None) or accumulator_of(t), 0) for t in inputs)
    node.needs = (True,) * len(inputs)
    node.out_data = None
    node.pre_hooks = None
    node.freed = False
    return node


def _attach_outputs(core: BackwardNode, plan: GradPlan, outs: list, specs: list) -> None:
    """Give each differentiable output its own node packing its gradient into one vector."""
    offsets = [0, *itertools.accumulate(math.prod(shape) for shape, _ in specs)]
    dtype = default_backend().xp.result_type(*[d for _, d in specs])
    core.attrs["packed"] = (offsets, dtype)
    attrs_backend = plan.backend
    for slot, i in enumerate(plan.diff_outs):
        attrs = {"span": (int(offsets[slot]), int(offsets[slot + 1])),
                 "total": int(offsets[-1]), "dtype": dtype, "backend": attrs_backend}
        node = _tape_node(JitOutputBackward0, _OUTPUT_OP, [], attrs)
        node.next_functions = ((core, 0),)
        node.needs = (True,)
        outs[i].requires_grad = True
        outs[i].grad_fn = node


def _pack_vjp(grad, inputs, out, needs, attrs):
    start, stop = attrs["span"]
    backend = attrs["backend"]  # the device the jitted function runs on
    packed = backend.zeros(attrs["total"], attrs["dtype"])
    packed[start:stop] = backend.asarray(grad._data).ravel()
    return (Tensor._make(packed),)


def _jit_vjp(grad, inputs, out, needs, attrs):
    plan: GradPlan = attrs["plan"]
    name = attrs["name"]
    if grad_state.grad_enabled:
        raise JitError(
            f"create_graph=True through the jitted function {name}(): its backward is a "
            "compiled program, which records no tape; differentiate the eager function "
            "instead (or dj.jit the whole higher-order computation)"
        )
    for v, version in attrs["variables"]:
        if v._version[0] != version:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: a tensor of shape {v.shape} read by the jitted function "
                f"{name}() is at version {v._version[0]}; expected version {version} instead."
            )
    seeds = _seeds(grad, plan, attrs)
    kept = attrs["node"]().out_data
    sources = {"seed": seeds, "saved": kept["saved"], "fed": kept["fed"], "none": (None,)}
    feed = [sources[kind][i] for kind, i in plan.bwd_sources]
    values = iter(plan.backward(feed))
    fed_ids = () if getattr(plan.backward, "fresh_outputs", False) else {
        id(storage(a)) for a in feed if a is not None and is_array(a)}
    results = []
    for has in plan.has_grad:
        if not has:
            results.append(None)
            continue
        value = next(values)
        if type(value) is not _ndarray:
            value = plan.backend.asarray(value)
        if not value.flags.c_contiguous:  # a transposed weight gradient: the optimizer's
            value = value.copy()  # elementwise updates run faster in C order
        elif fed_ids and id(storage(value)) in fed_ids:  # never hand out the caller's
            value = value.copy()  # or a saved array
        results.append(Tensor._make(value))
    return tuple(results)


def _seeds(grad, plan: GradPlan, attrs: dict) -> list:
    data = plan.backend.asarray(grad._data)
    if "packed" not in attrs:
        shape, dtype = attrs["specs"][0]
        return [_fit(plan.backend, data, shape, dtype, attrs["name"])]
    offsets, _ = attrs["packed"]
    seeds = []
    for slot, (shape, dtype) in enumerate(attrs["specs"]):
        part = data[offsets[slot]:offsets[slot + 1]].reshape(shape)
        seeds.append(_fit(plan.backend, part, shape, dtype, attrs["name"]))
    return seeds


def _fit(backend, data, shape, dtype, name: str):
    if data.shape != tuple(shape):
        raise JitError(f"the gradient flowing into an output of the jitted function "
                           f"{name}() has shape {data.shape}, expected {tuple(shape)}")
    data = backend.asarray(data, dtype)
    return data if data.flags.c_contiguous else data.copy()  # (ascontiguousarray makes 0-d 1-d)


_JIT_OP = _NodeOp("jit", _jit_vjp)
_OUTPUT_OP = _NodeOp("jit_output", _pack_vjp)
