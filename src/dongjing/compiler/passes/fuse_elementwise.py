"""Elementwise fusion: maximal convex groups of cheap elementwise ops on one large shape become
one kernel node that reads each input once and writes each output once.

"Cheap" ops (declared `cost=Cost.CHEAP` in the op table) are arithmetic, comparisons and logic;
transcendental ufuncs stay NumPy calls, whose SIMD loops beat a kernel library's scalar libm
calls (measured, see docs/compiler.md), except those `Cost.TRANSCENDENTAL` ops whose record
declares a vectorizable formulation for the node's dtype (`Op.kernel`, a `Kernel`) and where
that formulation beats the ufunc on this machine (`formula_cost`, measured once). Groups
under the `fusion_min_size` setting (`dj.compiler.set_options`) are left alone: call overhead
dominates.
"""

from __future__ import annotations

from ...core.registry import OPS, Cost, Kind, Op
from ...cpu_kernels import kernels
from ...cpu_kernels.options import get_options
from ...errors import GraphError
from .. import cuda_kernels, formula_cost
from ..ir import PassResult, Rebuilder, numel

KERNEL_DTYPES = {"float32", "float64", "int32", "int64", "bool"}  # what the kernels are tested on
# numba's scalar maximum/minimum return the first operand for +0.0 vs -0.0, NumPy the second:
# fusing them would change the sign of a zero (found by the fuzzer), so they stay NumPy calls
NOT_IN_KERNELS = {"maximum", "minimum"}
MAX_RECOMPUTE = 4  # ops; a cheaper value read by another kernel is recomputed there


class FusedBody:
    """The steps of a fused kernel: `steps[j] = (op, args)` (an elementwise ufunc op), an arg
    being ("in", k) (kernel input k) or ("t", j) (step j); `outputs` = the steps written out,
    in order; `members` = (node name, op name, user source line) of each step's node (for the
    profiler)."""

    def __init__(self, steps: tuple, outputs: tuple, size: int, members: tuple = (),
                 dtypes: tuple = ()):
        self.steps, self.outputs, self.size = steps, outputs, size
        self.members = members
        self.dtypes = dtypes  # each step's result dtype name (the CUDA kernels declare them)

    def __repr__(self) -> str:
        def ref(arg):
            return f"in{arg[1]}" if arg[0] == "in" else f"t{arg[1]}"

        parts = [f"t{j}={op.ufunc.__name__}({','.join(ref(a) for a in args)})"
                 for j, (op, args) in enumerate(self.steps)]
        outs = ",".join(f"t{j}" for j in self.outputs)
        return f"[{'; '.join(parts)} -> {outs}]"


def _no_forward(*args, **attrs):
    raise RuntimeError("internal: a fused kernel runs from generated code")


FUSED = Op("fused_elementwise", forward=_no_forward, infer=lambda *s, **a: ((), None), vjp=None,
           kind="fused")


def fusible(node, size_min: int, target: str = "cpu") -> bool:
    """One elementwise cheap ufunc (or a transcendental one with an in-kernel formulation) on a
    known shape whose inputs are that shape or size 1. For `target="cuda"` every elementwise
    ufunc with a CUDA form fuses (`cuda_kernels`): a GPU pays per launch, not per libm call."""
    op = node.op
    if target == "cuda":
        n = numel(node.shape)
        if op.kind is not Kind.ELEMENTWISE or n is None or n < size_min or node.dtype is None:
            return False
        return (all(i.dtype is not None for i in node.inputs)
                and cuda_kernels.fusible(op, node.dtype, [i.dtype for i in node.inputs])
                and all(i.shape == node.shape or numel(i.shape) == 1 for i in node.inputs))
    if op.kind is not Kind.ELEMENTWISE or op.ufunc is None or op.ufunc.__name__ in NOT_IN_KERNELS:
        return False
    n = numel(node.shape)
    if n is None or n < size_min or op.ufunc.nout != 1 or node.dtype.name not in KERNEL_DTYPES:
        return False
    if op.cost is not Cost.CHEAP and not (op.cost is Cost.TRANSCENDENTAL
                                          and kernels.has_formula(op, node.dtype)
                                          and formula_cost.pays(op, node.dtype)):
        return False
    return all(i.dtype is not None and i.dtype.name in KERNEL_DTYPES
               and (i.shape == node.shape or numel(i.shape) == 1) for i in node.inputs)


class _Groups:
    """Union-find over group ids, with the groups each node depends on (for convexity)."""

    def __init__(self):
        self.parent: dict = {}

    def find(self, g):
        while self.parent[g] != g:
            self.parent[g] = self.parent[self.parent[g]]
            g = self.parent[g]
        return g

    def new(self, g):
        self.parent[g] = g
        return g


def _form_groups(graph, size_min: int, target: str = "cpu") -> dict:
    """node -> group id, for fusible nodes; a group never depends on itself through an outsider."""
    groups = _Groups()
    group_of: dict = {}
    reach: dict = {}  # node -> raw ids of the groups it depends on (its own included)
    external: dict = {}  # group id -> raw ids of the groups it depends on through outsiders

    def roots(ids):
        return {groups.find(r) for r in ids}

    def upstream(ids) -> set:
        """The groups `ids` depend on, transitively: a kernel runs as a unit, so reading one
        of its values depends on everything any of its members reads."""
        seen: set = set()
        stack = list(roots(ids))
        while stack:
            g = stack.pop()
            if g not in seen:
                seen.add(g)
                stack.extend(roots(external[g]))
        return seen

    for node in graph.nodes:
        below = set()
        for i in node.inputs:
            below |= reach.get(i, set())
        if not fusible(node, size_min, target):
            reach[node] = below
            continue
        candidates = []
        for i in node.inputs:
            if i in group_of and i.shape == node.shape:
                g = groups.find(group_of[i])
                if g not in candidates:
                    candidates.append(g)
        accepted: list = []
        for g in candidates:
            trial = set(accepted) | {g}
            outside = [i for i in node.inputs
                       if not (i in group_of and groups.find(group_of[i]) in trial)]
            via_outsider = set()
            for i in outside:
                via_outsider |= upstream(reach.get(i, ()))
            for t in trial:
                via_outsider |= upstream(external[t])
            if not via_outsider & trial:  # merging must not close a cycle through an outsider
                accepted.append(g)
        gid = groups.new(node.id)
        ext = set()
        for i in node.inputs:
            if not (i in group_of and groups.find(group_of[i]) in accepted):
                ext |= reach.get(i, set())
        for g in accepted:
            ext |= external.pop(g)
            groups.parent[g] = gid
        external[gid] = ext
        group_of[node] = gid
        reach[node] = below | {gid}
    return {n: groups.find(g) for n, g in group_of.items()}


def fuse_elementwise(graph, fetches: list, size_min: int | None = None,
                     target: str = "cpu") -> PassResult:
    """Replace each group of two or more fusible nodes by a kernel node and its outputs.

    `target` is where the kernels run: "cpu" (numba loops) or "cuda" (CUDA kernels through
    CuPy, any size: see `compiler/cuda_kernels.py`)."""
    if size_min is None:
        size_min = get_options().fusion_min_size if target == "cpu" else 1
    if target == "cpu" and not kernels.available():
        rb = Rebuilder(graph)
        for node in graph.nodes:
            rb.map[node] = rb.copy(node)
        return PassResult(*rb.finish(fetches), ["no kernel library: elementwise ops stay NumPy"])
    group_of = _form_groups(graph, size_min, target)
    members: dict = {}
    for node in graph.nodes:
        if node in group_of:
            members.setdefault(group_of[node], []).append(node)
    members = {g: ns for g, ns in members.items() if len(ns) > 1}
    if not members:  # nothing to fuse (e.g. every elementwise op is small): the graph as it is
        return PassResult(graph, list(fetches), [])
    users: dict = {}
    for node in graph.nodes:
        for i in node.inputs:
            users.setdefault(i, []).append(node)
    fetched = set(fetches)
    dups = _recomputed(members, group_of, users, fetched)
    stored = _stored(graph, members, group_of, dups, fetched)
    position = {n: i for i, n in enumerate(graph.nodes)}
    rb = Rebuilder(graph)
    changes = []
    for unit in _schedule(graph, group_of, members):
        if isinstance(unit, list):
            g = group_of[unit[0]]
            nodes = sorted(set(unit) | dups[g], key=position.__getitem__)
            _emit_group(rb, nodes, set(unit), stored, changes)
        else:
            rb.map[unit] = rb.copy(unit)
    return PassResult(*rb.finish(fetches), changes)


def _cone(value, inside: set) -> set:
    """`value` and the nodes of its group it is computed from."""
    cone, stack = set(), [value]
    while stack:
        n = stack.pop()
        if n in cone:
            continue
        cone.add(n)
        stack.extend(i for i in n.inputs if i in inside)
    return cone


def _recomputed(members, group_of, users, fetched) -> dict:
    """group -> nodes of other groups it recomputes instead of reading their stored value.

    A value of at most `MAX_RECOMPUTE` ops whose readers outside its group are all kernels is
    cheaper to compute again (its inputs are available there: they precede its own group) than
    to write out and read back.
    """
    dups = {g: set() for g in members}
    changed = True
    while changed:  # a recomputed value may itself read values recomputed into its group
        changed = False
        for g, nodes in members.items():
            inside = set(nodes) | dups[g]
            for value in nodes:
                outside = [u for u in users.get(value, ()) if u not in inside]
                if value in fetched or not outside:
                    continue
                targets = {group_of.get(u) for u in outside}
                if not targets <= members.keys():
                    continue
                if any(u.op.kind != "elementwise" for u in outside):
                    continue
                cone = _cone(value, inside)
                if len(cone) <= MAX_RECOMPUTE:
                    for t in targets:
                        if not cone <= dups[t]:
                            dups[t] |= cone
                            changed = True
    return dups


def _stored(graph, members, group_of, dups, fetched) -> set:
    """The values that must be written out: fetched ones, and those read by a plain node or by
    a kernel that does not compute them itself (a recomputed value may read a value that its
    own group recomputes but the reading kernel does not)."""
    stored = set(fetched)
    for node in graph.nodes:
        if group_of.get(node) not in members:
            stored.update(node.inputs)
    for g, nodes in members.items():
        inside = set(nodes) | dups[g]
        for u in inside:
            stored.update(i for i in u.inputs if i not in inside)
    return stored


def _schedule(graph, group_of, members) -> list:
    """Nodes and groups (lists of nodes) in a topological order, close to the original one."""
    def unit_of(node):
        g = group_of.get(node)
        return ("group", g) if g in members else node

    deps: dict = {}
    order: list = []
    for node in graph.nodes:
        unit = unit_of(node)
        if unit not in deps:
            deps[unit] = []
            order.append(unit)
        for i in node.inputs:
            d = unit_of(i)
            if d != unit and d not in deps[unit]:
                deps[unit].append(d)
    done: set = set()
    out: list = []
    for start in order:
        if start in done:
            continue
        stack = [(start, iter(deps[start]))]
        on_stack = {start}
        while stack:
            unit, pending = stack[-1]
            nxt = next((d for d in pending if d not in done), None)
            if nxt is None:
                done.add(unit)
                out.append(members[unit[1]] if isinstance(unit, tuple) else unit)
                on_stack.discard(unit)
                stack.pop()
            elif nxt in on_stack:
                raise GraphError("internal: fusion groups form a cycle")
            else:
                on_stack.add(nxt)
                stack.append((nxt, iter(deps[nxt])))
    return out


def _emit_group(rb, nodes, own, stored, changes) -> None:
    """Emit the kernel node and one output node per value of `own` that must be `stored`.

    `nodes` = the group's own nodes and those it recomputes, in topological order.
    """
    inside = set(nodes)
    escaping = [n for n in nodes if n in own and n in stored]
    needed = set()
    for n in escaping:
        needed |= _cone(n, inside)
    nodes = [n for n in nodes if n in needed]
    if not nodes:
        return  # every value of this group is recomputed where it is read
    inputs: list = []
    index: dict = {}
    steps = []
    for node in nodes:
        args = []
        for i in node.inputs:
            if i in inside:
                args.append(("t", index[i]))
            else:
                if i not in inputs:
                    inputs.append(i)
                args.append(("in", inputs.index(i)))
        index[node] = len(steps)
        steps.append((node.op, tuple(args)))
    size = numel(next(iter(own)).shape)  # recomputed values may be smaller (broadcast)
    members = tuple((n.name, n.op.name, n.source) for n in nodes)
    dtypes = tuple(n.dtype.name for n in nodes)
    body = FusedBody(tuple(steps), tuple(index[n] for n in escaping), size, members, dtypes)
    kernel = rb.emit(tuple(rb.map[i] for i in inputs), op=FUSED, attrs={"body": body},
                     shape=(), dtype=None, name=rb.fresh_name("fused"), source=nodes[-1].source)
    get = OPS["tuple_get"]
    for k, n in enumerate(escaping):
        rb.map[n] = rb.emit((kernel,), op=get, attrs={"index": k, "shape": n.shape,
                                                       "dtype": n.dtype},
                            shape=n.shape, dtype=n.dtype, name=n.name, source=n.source)
    names = ", ".join("%" + n.name for n in nodes)
    changes.append(f"fused {len(nodes)} nodes ({names}) into %{kernel.name}: "
                   f"{len(inputs)} inputs, {len(escaping)} outputs")
