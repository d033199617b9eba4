"""The backward engine: order the tape topologically, then run each node's vjp once.

Iterative throughout (a 100,000-op chain never meets Python's recursion limit). Gradient that
reaches a node along several paths is summed before the node runs, never pushed on twice.
"""

from __future__ import annotations

from ..backends import backend_of, numpy_backend
from ..backends.buffer_pool import pool as _pool
from ..core import autocast_state, late
from ..core import profiler_hooks as _profiler  # `_profiler.on`: a profiler is recording
from ..core.eager_modes import plain as _plain
from ..errors import AutogradError, DongjingError
from ..short_paths import declare as _declare_short_path
from ..short_paths import state as _short
from ..tensor import Tensor, _GradScope
from ..tensor import ndarray as _ndarray
from . import anomaly
from .function import AccumulateGrad, BackwardNode
from .grad_mode import recording
from .grad_mode import write as write_grad_mode
from .provenance import caller, describe, modification

_numpy_add_into = numpy_backend.add_into
_numpy_asarray = numpy_backend.xp.asarray
_numpy_add = numpy_backend.xp.add
_make = Tensor._make

_declare_short_path("engine.one_root", __name__, "one root's buffers set up without the loops")
_declare_short_path("engine.sum_of", __name__, "two gradients of one dtype summed by NumPy's add "
                    "directly instead of the add op (plain mode)")
_declare_short_path("engine.add_into", __name__, "a third gradient added in place into a sum the "
                    "engine made, instead of a new add")
_declare_short_path("engine.leaf_at_once", __name__, "a leaf whose gradient is complete "
                    "accumulated at once, not queued")


def _dependencies(roots) -> dict:
    """Number of incoming edges of every node reachable from `roots`."""
    deps: dict = {}
    stack = list(roots)
    root_set = set(roots)  # nodes hash by identity
    while stack:
        for fn, _ in stack.pop().next_functions:
            if fn is None:
                continue
            if fn in deps:
                deps[fn] += 1
            else:
                deps[fn] = 1
                if fn not in root_set:  # a root reached from another is walked once
                    stack.append(fn)
    return deps


def _check_saved(node: BackwardNode) -> None:
    if node.freed:
        raise AutogradError(
            f"Trying to backward through the graph a second time (through {node.name()}, "
            f"created at {describe(getattr(node, 'where', None))}): its saved tensors were "
            f"freed by the first backward, called at {describe(node.freed)}. "
            "Specify retain_graph=True on the first backward() or dj.grad() call if you need "
            "to backward through the graph again."
        )
    for t, v in zip(node.inputs, node.versions):
        if t._version[0] != v:
            raise AutogradError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: an input of {node.name()} (op {node.op.name!r}, shape "
                f"{t.shape}) is at version {t._version[0]}; expected version {v} instead.\n"
                f"  saved by {node.op.name} at {describe(getattr(node, 'where', None))}\n"
                f"  {modification(t._version)}"
            )
    if node.op.saves_output and node.out_version[0] != node.out_saved_version:
        raise AutogradError(
            f"one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: the output of {node.name()} (op {node.op.name!r}) is at "
            f"version {node.out_version[0]}; expected version {node.out_saved_version} "
            f"instead.\n"
            f"  saved by {node.op.name} at {describe(getattr(node, 'where', None))}\n"
            f"  {modification(node.out_version)}"
        )


def _saved_output(node: BackwardNode):
    if node.out_data is None:
        return None
    out = Tensor._make(node.out_data, True)
    out.grad_fn = node
    out._version = node.out_version
    return out


def _call_hooks(hooks, grad):
    for hook in list(hooks):
        replaced = hook(grad)
        if replaced is not None:
            if getattr(replaced, "shape", None) != grad.shape:
                raise AutogradError(
                    f"the gradient hook {_hook_name(hook)} returned "
                    f"{_described(replaced)} for a gradient of shape {grad.shape}: a hook "
                    "returns None or a tensor of the gradient's shape"
                )
            grad = replaced
    return grad


def _hook_name(hook) -> str:
    code = getattr(hook, "__code__", None)
    name = getattr(hook, "__qualname__", None) or repr(hook)
    return f"{name} ({code.co_filename}:{code.co_firstlineno})" if code is not None else name


def _described(value) -> str:
    shape = getattr(value, "shape", None)
    return f"a value of shape {shape}" if shape is not None else f"{type(value).__name__}"


def _add(a, b):
    return b if a is None else a + b


def run_backward(
    roots: list,
    grads: list,
    retain_graph: bool,
    create_graph: bool,
    capture: dict | None = None,
) -> None:
    """Propagate `grads` from `roots` through the tape (see `_run_backward`)."""
    if not _plain.on:
        with autocast_state.suspended():  # backward runs in the forward's dtypes, as PyTorch's
            return _run_backward_checked(roots, grads, retain_graph, create_graph, capture)
    return _run_backward_checked(roots, grads, retain_graph, create_graph, capture)


def _run_backward_checked(roots, grads, retain_graph, create_graph, capture):
    if not anomaly.state.on:
        return _run_backward(roots, grads, retain_graph, create_graph, capture)
    with anomaly.in_backward():  # gradients are checked per node, named by the forward line
        return _run_backward(roots, grads, retain_graph, create_graph, capture)


def _run_backward(
    roots: list,
    grads: list,
    retain_graph: bool,
    create_graph: bool,
    capture: dict | None = None,
) -> None:
    """Propagate `grads` from `roots` (grad_fn or AccumulateGrad nodes) through the tape.

    Without `capture`, gradients reaching a leaf accumulate into its `.grad`. With `capture`
    (a dict whose keys are nodes), the gradient arriving at each key node is stored there
    instead and nothing accumulates (this is `dj.grad`).
    """
    deps = _dependencies(roots)
    # Gradients held in two places (the caller's own, or one object a rule sent along two
    # edges, as add's does): whoever keeps one copies it first. The ids stay valid while the
    # object lives; a stale id only costs a needless copy.
    if len(roots) == 1 and _short.on:  # short path: engine.one_root
        root = roots[0]
        buffers = {root: grads[0]}
        ready = [] if root in deps else [root]
        shared = {id(grads[0])}
    else:
        buffers = {}
        for node, g in zip(roots, grads):
            buffers[node] = _add(buffers.get(node), g)
        ready = [n for n in dict.fromkeys(roots) if deps.get(n, 0) == 0]
        shared = {id(g) for g in grads}
    owned: set = set()  # sums made here and still buffered: safe to add into in place
    freed_at = True if retain_graph else (caller() or True)  # named if backward comes again
    previous = recording()  # the engine's switch: recording only for create_graph
    write_grad_mode(create_graph)
    leaves_direct = capture is None and not _profiler.on and _short.on  # engine.leaf_at_once
    try:
        while ready:
            node = ready.pop()
            grad = buffers.pop(node, None)
            if owned:
                owned.discard(id(grad))
            if node.pre_hooks and grad is not None:
                grad = _call_hooks(node.pre_hooks, grad)
            if capture is not None and node in capture:
                capture[node] = grad
            if type(node) is AccumulateGrad:
                if capture is None and grad is not None:
                    if not _profiler.on:
                        _accumulate(node, grad, id(grad) in shared, create_graph)
                    else:  # profiler hook: an AccumulateGrad event
                        _profiler.accumulate(_accumulate, node, grad, id(grad) in shared,
                                             create_graph)
                continue
            if not _profiler.on:
                results = _apply_node(node, grad, retain_graph)
            else:  # profiler hook: one event per backward node
                results = _profiler.backward_node(_apply_node, node, grad, retain_graph)
            if node.freed is True:
                node.freed = freed_at
            if anomaly.state.on:
                anomaly.check_backward(node, grad, results)
            n_results = len(results)
            if n_results == 2:
                if results[0] is results[1] and results[0] is not None:
                    shared.add(id(results[0]))
            elif n_results > 2:
                _note_duplicates(results, shared)
            for (fn, _), g in zip(node.next_functions, results):
                if fn is None:
                    continue
                if g is not None:
                    prev = buffers.get(fn)
                    if prev is None:
                        buffers[fn] = g
                    elif (id(prev) in owned and _short.on
                          and _same_kind(prev._data, g._data)):
                        _add_into(prev._data, g._data)  # short path: engine.add_into
                    elif create_graph:
                        buffers[fn] = prev + g  # on the tape
                    else:
                        total = _sum_of(prev, g)
                        owned.add(id(total))
                        buffers[fn] = total
                left = deps[fn] - 1
                deps[fn] = left
                if left:
                    continue
                if type(fn) is AccumulateGrad and leaves_direct and not fn.pre_hooks:
                    # short path: engine.leaf_at_once (accumulated now, not queued)
                    leaf_grad = buffers.pop(fn, None)
                    if leaf_grad is not None:
                        if owned:
                            owned.discard(id(leaf_grad))
                        _accumulate(fn, leaf_grad, id(leaf_grad) in shared, create_graph)
                else:
                    ready.append(fn)
    finally:
        write_grad_mode(previous)


def _note_duplicates(results, shared: set) -> None:
    """Mark as shared any gradient object a node sends along more than one edge."""
    seen = set()
    for g in results:
        if g is not None:
            key = id(g)  # the results are alive here: ids are unique among them
            if key in seen:
                shared.add(key)
            else:
                seen.add(key)


def _sum_of(a, b):
    """`a + b` of two gradients, off the tape: NumPy's add directly when it is all there is
    to it (NumPy arrays of one dtype, no profiler event or anomaly check due), the op
    otherwise."""
    da, db = a._data, b._data
    if _plain.on and type(da) is _ndarray and type(db) is _ndarray and da.dtype is db.dtype:
        if da.shape == db.shape and da.nbytes >= _pool.min_bytes and da.dtype.kind == "f":
            total = _numpy_add(da, db, out=_pool.empty(da.shape, da.dtype))  # reused buffer
        else:
            total = da + db  # short path: engine.sum_of
        if type(total) is not _ndarray:  # two 0-d arrays sum to a NumPy scalar
            total = _numpy_asarray(total)
        return _make(total)
    return a + b


def _same_kind(a, b) -> bool:
    """Whether `b` may be added into `a` in place: one dtype, one array type."""
    return type(a) is type(b) and (a.dtype is b.dtype or a.dtype == b.dtype)


def _add_into(target, value) -> None:
    if type(target) is _ndarray:  # the common case, without looking the backend up
        _numpy_add_into(target, value)
    else:
        backend_of(target).add_into(target, value)


def _apply_node(node: BackwardNode, grad, retain_graph: bool):
    if grad is None:
        if node.freed:
            _check_saved(node)
        return (None,) * len(node.next_functions)
    inputs = node.inputs
    versions = node.versions
    if node.freed:
        _check_saved(node)  # raises
    for t, v in zip(inputs, versions):
        if t._version[0] != v:
            _check_saved(node)  # raises
    op = node.op
    if op.saves_output:
        if node.out_version[0] != node.out_saved_version:
            _check_saved(node)  # raises
        out = _saved_output(node)
    else:
        out = None
    results = op.vjp(grad, inputs, out, node.needs, node.attrs)
    for g, t in zip(results, inputs):
        if g is not None and g._data.shape != t._data.shape:
            results = _fit_shapes(node, results)
            break
    if not retain_graph:
        node.inputs = ()
        node.versions = ()
        node.out_data = None
        node.freed = True
    return results


def _fit_shapes(node: BackwardNode, results) -> tuple:
    """Reduce each broadcast gradient to its input's shape (the rules never do)."""
    sum_to_shape = late.sum_to_shape  # ops sit above the tape: provided when they load
    fitted = []
    for g, t in zip(results, node.inputs):
        if g is not None and g._data.shape != t._data.shape:
            g = sum_to_shape(g, t._data.shape)
            if g._data.shape != t._data.shape:
                raise DongjingError(
                    f"internal: the gradient rule of {node.op.name!r} gave a gradient of shape "
                    f"{g.shape} for an input of shape {t.shape}"
                )
        fitted.append(g)
    return tuple(fitted)


def _accumulate(acc: AccumulateGrad, grad, shared: bool, create_graph: bool) -> None:
    variable = acc._variable()  # the property's weak reference, read without the property
    if variable is None:
        return
    hooks = getattr(variable, "_hooks", None)
    if hooks:
        grad = _call_hooks(hooks, grad)
    if not create_graph and grad.requires_grad:
        grad = grad.detach()
    if grad._data.dtype is not variable._data.dtype and grad._data.dtype != variable._data.dtype:
        grad = grad.to(variable.dtype)
    direct = not _GradScope.open_anywhere  # no trace routes .grad: read and set the slot
    current = variable._grad if direct else variable.grad
    if current is None:
        if shared and not create_graph:
            grad = grad.clone()
        if direct and grad._data.shape == variable._data.shape:
            variable._grad = grad  # the property's checks, already known to hold
        else:
            variable.grad = grad
    else:
        variable.grad = current + grad

