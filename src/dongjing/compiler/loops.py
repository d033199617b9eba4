"""Loops written into the generated code: a `while_loop`, `while_record` (the loop run once for
its gradient, stacking each iteration's entry values) or `while_grad` (the reverse loop over
those stacks) node of a compiled graph becomes one generated Python function whose `while` /
`for` runs the condition's and the body's statements inline. Per iteration there is no
sub-program call, no feed or output list, and no copy of a value that is not in a planned
buffer; the body's intermediates reuse its own planned buffers every iteration.

Loop-invariant statements (a pure op of captured values, constants and Variables only, not
written into a buffer) run once, when the loop is entered, not once per iteration. The reverse
loop sums the gradients of captured values into one accumulator each, in place; the parts it
sums may live in planned buffers.
"""

from __future__ import annotations

import types

from ..ops import while_grad
from ..ops.subgraph import SubGraph
from .ir import is_pure
from .memory import can_write_into, kernel_output
from .safety import percent_name

LOOP_OPS = frozenset({"while_loop", "while_record", "while_grad"})

# A loop body is compiled by the whole pipeline, which is built on this module (through codegen):
# it hands over its `prepare` and `plan` when it loads (see compiler/pipeline.py).
pipeline = types.SimpleNamespace(prepare=None, plan=None)


def loop_call(gen, node, args: list) -> str | None:
    """The call of `node`'s generated loop function (generated on first use), or None when its
    sub-graphs are not compiled (then the op's own forward runs them)."""
    name = gen.loops.get(node)
    if name is None:
        level = _level(node)
        if not level:
            return None
        name = gen.ns.reserve("_loop_" + node.op.name)
        write = _write_grad if node.op.name == "while_grad" else _write_while
        gen.loop_sources[name] = write(gen, node, name, level)
        gen.loops[node] = name
    return f"{name}({', '.join(args)})"


def _level(node) -> int:
    subs = [v for v in node.attrs.values() if isinstance(v, SubGraph)]
    return min((getattr(s, "compile_level", 0) for s in subs), default=0)


class _Body:
    """One sub-graph lowered for a loop function: its arg and output names, and its statements
    split into those that run once on entry and those that run every iteration.

    `targets[j]`: (storage, arg index): storage (an expression) that output j may be computed
    straight into (a slot of the loop's stack, or one of two alternating arrays), and the arg
    that carries output j into the next iteration; `written` says which outputs are. `reused`:
    the storage is written again two iterations later (alternating arrays), so an output is
    written there only if no output of an iteration may share the value that arg brought in.
    """

    def __init__(self, gen, sub, level: int, taken: set, prefix: str, accumulated=(),
                 targets: dict | None = None, reused: bool = False):
        opt, order, fetches, feeds, stats = pipeline.prepare(sub, sub.outputs, sub.args, level,
                                                     gen.backend)
        fed = set(feeds)
        invariant = {f for f in feeds[sub.n_explicit:] if f is not None}  # the captures
        for node in order:
            if node not in fed and _invariant(node, invariant):
                invariant.add(node)
        memory = pipeline.plan(order, fetches, level, stats, [fetches[i] for i in accumulated],
                      invariant)
        body = type(gen)(opt, order, fetches, feeds, memory, ns=gen.ns, taken=taken,
                         backend=gen.backend,
                         buf_prefix=prefix)
        body.kernels, body.loop_sources = gen.kernels, gen.loop_sources  # listed with the program
        self.written = set()
        if memory is not None and targets:
            kept: set = set()  # what an output may share: it outlives the iteration
            for node in fetches:
                kept |= memory.roots.get(node, {node})
            for j, (target, arg) in targets.items():
                node = fetches[j]
                if (node not in fed and node not in invariant and fetches.count(node) == 1
                        and can_write_into(node) and not any(d is None for d in node.shape)
                        and (not reused or feeds[arg] not in kept)):
                    body.out_override[node] = target
                    self.written.add(j)
        self.gen = body
        self.args = [body.name(f) if f is not None else None for f in feeds]
        self.outs = [body.name(o) for o in fetches]
        self.fetches = fetches
        self.once, self.each = [], []
        for node in order:
            if node not in fed:
                line = body.statement(node).strip()
                (self.once if node in invariant else self.each).append(line)
        body.buffers()

    def bind(self, index: int, value: str) -> list:
        """`arg_name = value` for arg `index`, if the body reads that arg."""
        name = self.args[index]
        if name is None:
            return []
        return [f"{name} = {value}  # {percent_name(self.gen.feeds[index].name)}"]

    def shares_buffer(self, index: int) -> bool:
        """Output `index` may share a planned buffer, which the next iteration writes over."""
        node, plan = self.fetches[index], self.gen.plan
        return any(r in plan.buffer_of for r in plan.roots.get(node, (node,)))

    def out(self, index: int) -> str:
        """Output `index` as a value that outlives this iteration (a copy only if needed)."""
        if self.shares_buffer(index):
            return f"_np.array({self.outs[index]})"
        return self.outs[index]


def _invariant(node, invariant: set) -> bool:
    """Computed from loop-invariant values only, by a pure op (never a random draw)."""
    if node.op.kind == "source":
        return node.op.name in ("constant", "variable")  # a run's Variable reads do not change
    if not is_pure(node) or node.op.kind == "fused" or kernel_output(node):
        return False
    return all(i in invariant for i in node.inputs)


def _indent(lines: list, depth: int) -> list:
    return ["    " * depth + line for line in lines]


def _known(arg) -> bool:
    return arg.dtype is not None and not any(d is None for d in arg.shape)


def _spec(gen, arg) -> str:
    return f"{tuple(int(d) for d in arg.shape)!r}, {gen.ns.bind('_dtype', arg.dtype)}"


def _write_while(gen, node, name: str, level: int) -> str:
    """A while_loop, or a while_record: it also keeps each iteration's entry values, in one
    stack per loop value whose iteration k+1 entry the body computes straight into slot k+1
    (capacity: the previous run's iteration count, grown by half when exceeded)."""
    attrs = node.attrs
    n, limit = attrs["n_vars"], attrs["maximum_iterations"]
    record = node.op.name == "while_record"
    cond_graph, body_graph = attrs["cond_graph"], attrs["body_graph"]
    known = [j for j in range(n) if _known(body_graph.args[j])]
    slot = "_S{}[_k + 1, ...]" if record else "_P{}[_k & 1]"  # _P: two alternating arrays
    taken: set = set()
    cond = _Body(gen, cond_graph, level, taken, f"_buf{name}_c_")
    body = _Body(gen, body_graph, level, taken, f"_buf{name}_b_",
                 targets={j: (slot.format(j), j) for j in known}, reused=not record)
    n_cond, n_body = len(cond_graph.captures), len(body_graph.captures)
    params = ([f"_init{j}" for j in range(n)] + [f"_cc{j}" for j in range(n_cond)]
              + [f"_bc{j}" for j in range(n_body)])
    lines = [f"def {name}({', '.join(params)}):"]
    top = [f"_v{j} = _init{j}" for j in range(n)] + ["_k = 0"]
    for j in range(n_cond):
        top += cond.bind(n + j, f"_cc{j}")
    for j in range(n_body):
        top += body.bind(n + j, f"_bc{j}")
    top += cond.once  # the condition is cheap: its invariants run where it does
    stacked = known if record else []
    if record:
        hint = gen.ns.bind("_hint" + name, [1])  # the previous run's iteration count + 1
        new, grow = (gen.ns.bind("_new_stack", _helper("new_stack")),
                     gen.ns.bind("_grow_stack", _helper("grow_stack")))
        top.append(f"_cap = {hint}[0]")
        top += [f"_S{j} = {new}(_np, _init{j}, _cap, {_spec(gen, body_graph.args[j])})"
                for j in stacked]
        top += [f"_h{j} = [_init{j}]" for j in range(n) if j not in stacked]
    if not record:
        pair = gen.ns.bind("_pair", _helper("pair"))
        top += [f"_P{j} = {pair}(_np, {_spec(gen, body_graph.args[j])})"
                for j in sorted(body.written)]
    test = [line for j in range(n) for line in cond.bind(j, f"_v{j}")] + cond.each
    step = []
    if stacked:
        step += ["if _k + 1 == _cap:", "    _cap += _cap // 2 + 1"]
        step += [f"    _S{j} = {grow}(_S{j}, _cap)" for j in stacked]
    for j in range(n):
        step += body.bind(j, f"_v{j}")
    step += body.each
    news = []
    for j in range(n):
        if j in body.written:
            news.append(body.outs[j])
        elif j in stacked:  # a copy in the stack's slot; the slot is the value if need be
            step.append(f"{slot.format(j)} = {body.outs[j]}")
            news.append(slot.format(j) if body.shares_buffer(j) else body.outs[j])
        else:
            news.append(body.out(j))
    step.append(f"{', '.join(f'_v{j}' for j in range(n))}, = {', '.join(news)},")
    if record:
        step += [f"_h{j}.append(_v{j})" for j in range(n) if j not in stacked]
    step.append("_k += 1")
    if limit is not None:
        step += [f"if _k >= {int(limit)}:", "    break"]
    if limit is None or limit > 0:  # else the condition is never tested
        lines += _indent(top + test + [f"if {cond.outs[0]}:"], 1)
        lines += _indent(body.once + ["while True:"], 2)
        lines += _indent(step + test + [f"if not {cond.outs[0]}:", "    break"], 3)
    else:
        lines += _indent(top, 1)
    finals = [f"_v{j}" for j in range(n)]
    if record:
        history = gen.ns.bind("_stack_history", _helper("stack_history"))
        lines += _indent([f"{hint}[0] = _k + 1"], 1)
        stacks = [f"_S{j}[:_k]" if j in stacked else f"{history}(_h{j}[:-1], _init{j})"
                  for j in range(n)]
        result = stacks + (finals if attrs.get("with_finals") else [])
    else:
        result = finals
    lines += _indent([f"return ({', '.join(result)},)"], 1)
    return "\n".join(lines) + "\n"


def _write_grad(gen, node, name: str, level: int) -> str:
    """The reverse loop of a while_grad: iteration k reads entry k of every stack, the
    gradients carried from iteration k+1 (computed into two alternating arrays), and the exit
    values (entry k+1, or the finals)."""
    attrs = node.attrs
    n, n_diff, cap_index = attrs["n_vars"], attrs["n_diff"], attrs["cap_index"]
    grad_graph = attrs["grad_graph"]
    n_caps = len(grad_graph.captures)
    parts = range(n_diff, n_diff + len(cap_index))
    carried = {j: (f"_P{j}[_k & 1]", n + j) for j in range(n_diff)
               if _known(grad_graph.args[n + j])}
    body = _Body(gen, grad_graph, level, set(), f"_buf{name}_g_", accumulated=parts,
                 targets=carried, reused=True)
    params = ([f"_s{j}" for j in range(n)] + [f"_g{j}" for j in range(n_diff)]
              + [f"_f{j}" for j in range(n)] + [f"_c{j}" for j in range(n_caps)])
    exits = n + n_diff  # grad_graph args: loop values, gradients, exits, captures
    zeros = gen.ns.bind("_accumulator", _helper("accumulator"))
    top = ["_n = _s0.shape[0]"] if n else ["_n = 0"]
    for j in range(n_caps):
        top += body.bind(2 * n + n_diff + j, f"_c{j}")
    top += [f"_a{i} = {zeros}(_c{c})" for i, c in enumerate(cap_index)]
    top += [f"_d{j} = _g{j}" for j in range(n_diff)]
    for j in range(n):
        top += body.bind(exits + j, f"_f{j}")
    pair = gen.ns.bind("_pair", _helper("pair"))
    enter = [f"_P{j} = {pair}(_np, {_spec(gen, grad_graph.args[n + j])})"
             for j in sorted(body.written)]
    step = []
    for j in range(n):
        step += body.bind(j, f"_s{j}[_k]")
    for j in range(n_diff):
        step += body.bind(n + j, f"_d{j}")
    step += body.each
    step += [f"_np.add(_a{i}, {body.outs[n_diff + i]}, out=_a{i}, casting='unsafe')"
             for i in range(len(cap_index))]
    if n_diff:
        news = [body.outs[j] if j in body.written else body.out(j) for j in range(n_diff)]
        step.append(f"{', '.join(f'_d{j}' for j in range(n_diff))}, = {', '.join(news)},")
    for j in range(n):  # iteration k-1 exits with the values iteration k entered with
        step += body.bind(exits + j, f"_s{j}[_k]")
    lines = [f"def {name}({', '.join(params)}):"]
    lines += _indent(top + ["if _n:"], 1)
    lines += _indent(enter + body.once + ["for _k in range(_n - 1, -1, -1):"], 2)
    lines += _indent(step, 3)
    result = [f"_d{j}" for j in range(n_diff)] + [f"_a{i}" for i in range(len(cap_index))]
    lines += _indent([f"return ({', '.join(result)},)"], 1)
    return "\n".join(lines) + "\n"


def _helper(name: str):
    return getattr(while_grad, name)
