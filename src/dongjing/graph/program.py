"""The contract between Session and whatever builds executable code for a graph.

`Session` (and `dj.jit`, through it) asks a builder for a `Program` once per (graph.version,
fetch nodes, feed nodes) and calls it for every run. Two builders exist:
`runtime.interpreter.build_interpreter` (a plain topological-order interpreter, `optimize=0`)
and `dongjing.compiler.build_program(graph, fetch_nodes, feed_nodes, level)` (passes + code
generation, `optimize>=1`). Both return a subclass of `Program`, which answers the questions a
caller has about a program — which nodes it takes (`feed_nodes`, in call order), which it
returns (`fetch_nodes`, in result order), which graph it runs — so no caller recomputes them.

Run semantics every Program must keep:
- `program(feed_arrays)` takes one array per feed node (same order, already validated and
  converted to the node's dtype) and returns one value per fetch node (same order). A fetched
  effect node (`assign`, `group`; `node.op.kind == "effect"`) gives `None`.
- Only the nodes the fetches need run; a fed node is never computed (its value is the feed).
- Every read of a Variable (`variable` node, `attrs["ref"]`) sees its value from before the run.
- Assignments are computed during the run but committed together at the end, and only if the
  whole run succeeded: collect `(ref, new_value)` pairs and call `commit_assignments(pending)`.
  A run that raises changes no Variable.
- Returned arrays must not alias a Variable's or a constant's storage (copy those), so a later
  run or update never changes a value the user already holds.

Control-flow nodes (`op.kind == "control"`: `cond`, `while_loop`) output a Python tuple of
arrays (`node.dtype is None`); `tuple_get` nodes (attrs `index`) pick one element. Their
`op.forward` runs the sub-graphs, so a builder may treat them as opaque calls.
"""

from __future__ import annotations

from ..backends import backend_of, is_array


class Program:
    """Executable code for one set of fetches of one graph (see the module docstring).

    `graph` is the graph it runs (after optimization, for a compiled program); `feed_nodes`
    and `fetch_nodes` are nodes of that graph, in call and result order; `source` is the
    generated Python source (None for an interpreter); `stats` has one dict per pass.
    """

    graph: object
    feed_nodes: list
    fetch_nodes: list
    source: str | None = None
    stats: list
    # True when no returned array shares memory with a feed (a compiled program returns only
    # storage of its own run, and copies anything else), so callers need not check
    fresh_outputs = False

    def __call__(self, feed_arrays: list) -> list:
        raise NotImplementedError


def storage(array):
    """The array that owns `array`'s memory (following `.base`), to compare by identity."""
    base = getattr(array, "base", None)
    while is_array(base):
        array, base = base, base.base
    return array


def commit_assignments(pending: list) -> None:
    """Write each `(ref, value)` into `ref`'s existing array, then bump `ref._version`.

    Values that view a target's storage are copied first, so a swap `a <- b, b <- a` commits
    both old values. In place, so eager views of a Variable (and nn.Modules holding it) see the
    update.
    """
    if not pending:
        return
    targets = {id(storage(ref._data)) for ref, _ in pending}
    staged = []
    for ref, value in pending:
        if id(storage(value)) in targets:
            value = backend_of(ref._data).array(value)
        staged.append((ref, value))
    for ref, value in staged:
        ref._data[...] = value
        ref._version[0] += 1
