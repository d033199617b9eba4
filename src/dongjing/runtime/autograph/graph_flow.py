"""Tensor-dependent `if` and `while` of converted code as graph ops (`cond` / `while_loop`),
with the state variables named: every mismatch error names the variable and the user's line."""

from __future__ import annotations

from ...backends import backend_of, default_backend
from ...dispatch import apply
from ...graph import builder
from ...ops import cast, ne, reshape
from ...ops.convert import as_tensor
from ...ops.registry import Spec, get
from ...ops.subgraph import trace
from ...tensor import Tensor
from . import values as V
from .values import ConversionError

RETVAL = "_dj_retval"


def _label(name: str) -> str:
    if name == RETVAL:
        return "the return value"
    if name.startswith("_dj_"):
        return f"the loop's {name[4:].rstrip('_0123456789')} flag"
    return f"variable {name!r}"


def as_bool(t, where: str):
    """A tensor condition as a bool scalar tensor (a non-bool one: `!= 0`, like Python)."""
    t = as_tensor(t)
    if any(d is None for d in t.shape) or _numel(t.shape) != 1:
        raise ConversionError(f"the condition at {where} is a tensor of shape {tuple(t.shape)}; a "
                         "condition needs a single value (use .any() or .all())")
    if t.dtype.kind != "b":
        t = ne(t, 0)
    return reshape(t, ()) if t.shape != () else t


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _graph():
    graph = builder.state.graph
    if graph is None:
        raise ConversionError("internal: tensor control flow outside a graph")
    return graph


def _outputs(node, specs) -> list:
    tuple_get = get("tuple_get")
    return [apply(tuple_get, Tensor._symbolic(node), index=i, shape=s.shape, dtype=s.dtype)
            for i, s in enumerate(specs)]


def _check_pair(name: str, a, b, where: str, what: str) -> None:
    if a.dtype != b.dtype:
        raise ConversionError(f"{_label(name)} is {a.dtype} {what[0]} but {b.dtype} {what[1]} "
                         f"({where}); a graph value keeps one dtype: cast it")
    if len(a.shape) != len(b.shape) or any(
            x is not None and y is not None and x != y for x, y in zip(a.shape, b.shape)):
        raise ConversionError(f"{_label(name)} has shape {tuple(a.shape)} {what[0]} but "
                         f"{tuple(b.shape)} {what[1]} ({where}); a graph value keeps its shape")


def graph_if(pred, true_fn, false_fn, state: tuple, names: tuple, where: str) -> tuple:
    """`if` on a symbolic tensor: both branches are traced into one `cond` op."""
    parent = _graph()
    pred = as_bool(pred, where)
    results = {}

    def branch(fn, key):
        def run():  # fresh handles: an in-place `x += 1` in one branch stays in it
            results[key] = tuple(fn(*[_fresh(v) for v in state]))
            return as_tensor(False)  # outputs are chosen once both branches are known
        return run

    tg, _ = trace(branch(true_fn, "t"), [], parent, "if_true")
    fg, _ = trace(branch(false_fn, "f"), [], parent, "if_false")
    tg.outputs, fg.outputs = [], []
    merged: list = []  # per name: ("value", v) or ("leaves", desc, [(t_index | python value)])
    pairs: list = []  # (name, true tensor, false tensor)
    for name, a, b in zip(names, results["t"], results["f"]):
        if V.is_undefined(a) and V.is_undefined(b):
            merged.append(("value", a))
            continue
        if V.is_undefined(a) or V.is_undefined(b):
            if name != RETVAL:
                side = "true" if V.is_undefined(b) else "false"
                why = (f"{_label(name)} is assigned only in the {side} branch of the tensor `if` "
                       f"at {where} and used after it; in a graph both branches run: assign it "
                       "in both branches or before the `if`")
                merged.append(("value", V.Undefined(name, why)))
                continue
            fill = _zeros_like_structure(b if V.is_undefined(a) else a)  # never read: the
            a, b = (fill, b) if V.is_undefined(a) else (a, fill)  # return flag guards it
        la, lb = [], []
        da, db = V.flatten(a, la), V.flatten(b, lb)
        if not V.same_structure(da, db):
            if name == RETVAL:
                raise ConversionError(f"the function returns different structures depending on a "
                                 f"tensor condition (at {where}): {V.describe(a)} on one path "
                                 f"and {V.describe(b)} on the other; a graph returns one "
                                 "structure: return the same structure from every `return`")
            raise ConversionError(f"the branches of the tensor `if` at {where} give different "
                             f"structures: {_label(name)} is {V.describe(a)} in the true "
                             f"branch and {V.describe(b)} in the false branch")
        slots = []
        for x, y in zip(la, lb):
            if V.is_number(x) and V.is_number(y) and type(x) is type(y) and x == y:
                slots.append(("const", x))
                continue
            tx = x if isinstance(x, Tensor) else None
            ty = y if isinstance(y, Tensor) else None
            tx = as_tensor(x, ty) if tx is None else tx
            ty = as_tensor(y, tx) if ty is None else ty
            _check_pair(name, tx, ty, where, ("in the true branch", "in the false branch"))
            slots.append(("out", len(pairs)))
            pairs.append((name, tx, ty))
        merged.append(("leaves", da, slots))
    with tg.as_default():
        tg.outputs = [builder.to_node(tg, t) for _, t, _ in pairs]
    with fg.as_default():
        fg.outputs = [builder.to_node(fg, f) for _, _, f in pairs]
    specs = []
    for a, b in zip(tg.outputs, fg.outputs):
        specs.append(Spec(tuple(x if x == y else None for x, y in zip(a.shape, b.shape)),
                          a.dtype))
    outs: list = []
    if pairs:
        inputs = [pred] + [Tensor._symbolic(n) for n in tg.captures + fg.captures]
        node = apply(get("cond"), *inputs, true_graph=tg, false_graph=fg, out_specs=specs)._node
        outs = _outputs(node, specs)
    final = []
    for entry in merged:
        if entry[0] == "value":
            final.append(entry[1])
            continue
        leaves = [v if kind == "const" else outs[v] for kind, v in entry[2]]
        final.append(V.rebuild(entry[1], leaves))
    return tuple(final)


def _fresh(value):
    if type(value) is Tensor and value._node is not None:
        return Tensor._symbolic(value._node)
    if type(value) in (list, tuple):
        return type(value)(_fresh(v) for v in value)
    return value


def graph_while(test, body, state: tuple, names: tuple, where: str) -> tuple:
    """`while` on a symbolic condition: one `while_loop` op carrying the tensor leaves of the
    state. Python objects in the state must come out of the body unchanged."""
    casts: dict = {}
    carried_retval = False
    for _ in range(4):
        result = _try_while(test, body, state, names, where, casts, carried_retval)
        if result[0] == "done":
            return result[1]
        casts, carried_retval = result[1], result[2]
    raise ConversionError(f"internal: the tensor `while` at {where} did not settle its loop state")


def _try_while(test, body, state, names, where, casts, carry_retval):
    parent = _graph()
    descs, leaves, owner = [], [], []  # owner[k]: the name index of leaf k
    for i, (name, value) in enumerate(zip(names, state)):
        if V.is_undefined(value) and name == RETVAL and carry_retval is not False:
            value = carry_retval
        if V.is_undefined(value):
            descs.append(None)
            continue
        before = len(leaves)
        descs.append(V.flatten(value, leaves))
        owner += [i] * (len(leaves) - before)
    init = []
    for k, leaf in enumerate(leaves):
        t = as_tensor(leaf) if not isinstance(leaf, Tensor) else leaf
        if k in casts and t.dtype != casts[k]:
            t = cast(t, casts[k])
        init.append(t)
    nodes = [builder.to_node(parent, t) for t in init]
    args = [(n.shape, n.dtype, names[owner[k]].lstrip("_")) for k, n in enumerate(nodes)]

    def values_from(params):
        out, pos = [], [0]
        for i, desc in enumerate(descs):
            out.append(state[i] if desc is None else V.rebuild(desc, params, pos))
        return out

    new_casts, retval_spec, seen = dict(casts), carry_retval, {}

    def run_body(*params):
        outs = tuple(body(*values_from(list(params))))
        seen["outs"] = outs
        flat = []
        for i, (name, value) in enumerate(zip(names, outs)):
            if descs[i] is None:
                continue
            got: list = []
            desc = V.flatten(value, got) if not V.is_undefined(value) else None
            if desc is None or not V.same_structure(descs[i], desc):
                raise ConversionError(
                    f"{_label(name)} enters the tensor `while` at {where} as "
                    f"{V.describe(state[i])} but the loop body makes it {V.describe(value)}; "
                    "a graph loop keeps each variable's structure and Python values fixed")
            flat += got
        out_tensors = []
        for k, (p, v) in enumerate(zip(params, flat)):
            t = v if isinstance(v, Tensor) else as_tensor(v, p)
            if t.dtype != p.dtype and not isinstance(leaves[k], Tensor) and k not in casts:
                new_casts[k] = t.dtype  # a Python number before the loop: start in this dtype
            out_tensors.append(t)
        return out_tensors or [as_tensor(False)]

    body_graph, _ = trace(run_body, args, parent, "while_body")
    retry = new_casts != casts
    for i, (name, value) in enumerate(zip(names, seen["outs"])):
        if descs[i] is None and name == RETVAL and not V.is_undefined(value) \
                and retval_spec is False:
            retval_spec = _zeros_like_structure(value)
            retry = True
    if retry:
        return ("retry", new_casts, retval_spec)
    for k, (n, out) in enumerate(zip(nodes, body_graph.outputs)):
        _check_pair(names[owner[k]], n, out, where, ("before the loop", "after an iteration"))

    def run_test(*params):
        return as_bool(test(*values_from(list(params))), where)

    cond_graph, _ = trace(run_test, args, parent, "while_test")
    if not nodes:
        raise ConversionError(f"the tensor `while` at {where} changes no tensor: its condition "
                         "could never change (an endless loop)")
    specs = [Spec(n.shape, n.dtype) for n in nodes]
    inputs = [Tensor._symbolic(n) for n in nodes + cond_graph.captures + body_graph.captures]
    node = apply(get("while_loop"), *inputs, cond_graph=cond_graph, body_graph=body_graph,
                 n_vars=len(nodes), maximum_iterations=None, out_specs=specs)._node
    outs = _outputs(node, specs)
    final, pos = [], [0]
    for i, (name, desc) in enumerate(zip(names, descs)):
        if desc is not None:
            final.append(V.rebuild(desc, outs, pos))
        elif V.is_undefined(state[i]) and not V.is_undefined(seen["outs"][i]):
            final.append(V.Undefined(name, (
                f"{_label(name)} is first assigned inside the tensor loop at {where} and used "
                "after it; assign it before the loop so the graph loop can carry it")))
        else:
            final.append(state[i])
    return ("done", tuple(final))


def _zeros_like_structure(value):
    """Zeros of `value`'s structure (a return value before any `return` ran; never read)."""
    leaves: list = []
    desc = V.flatten(value, leaves)
    zeros = []
    for x in leaves:
        t = as_tensor(x)
        if any(d is None for d in t.shape):
            raise ConversionError("a `return` inside a tensor loop gives a value of unknown shape "
                             f"{tuple(t.shape)}; return after the loop instead")
        backend = default_backend() if t._data is None else backend_of(t._data)
        zeros.append(Tensor._make(backend.zeros(t.shape, t.dtype)))
    return V.rebuild(desc, zeros)
