"""Calls up: the few functions a lower floor needs from a higher one, provided by the higher floor
when it loads (as JAX's lax fills the autodiff rule tables and tinygrad its pattern tables).

The tape and the graph sit below the op table yet sum a broadcast gradient back or replay a view
with ops; the op record decomposes a composite into ops; a control-flow op runs a sub-graph with
the runtime's interpreter. Each reads its slot here at call time. Importing any dongjing module
imports the package, which loads every floor, so every slot is set before user code runs
(`missing()` lists the empty ones; tests/test_layering.py checks there are none).
"""

from __future__ import annotations

# slot -> the floor that provides it, and what it is
SLOTS = {
    "ops": "ops: the dongjing.ops namespace (a composite op's decomposition calls it)",
    "apply": "dispatch: `apply(op, *inputs, **attrs)`, an op record run now or added to a graph",
    "as_tensor": "ops: `ops.convert.as_tensor`, user data (a gradient, a constant) as a Tensor",
    "cast": "ops: `dj.cast`",
    "sum_to_shape": "ops: `ops.broadcast.sum_to_shape`, a broadcast gradient summed to a shape",
    "sum_to_like": "ops: `ops.broadcast.sum_to_like`, the same when the shape is known at run time",
    "getitem": "ops: the `getitem` op record (a view replayed on a new base)",
    "slice_assign": "ops: `ops.index.slice_assign`, a view's new value written into its base",
    "subgraph_program": "runtime: `interpreter.subgraph_program`, a sub-graph run eagerly",
}

ops = apply = as_tensor = cast = sum_to_shape = sum_to_like = getitem = slice_assign = None
subgraph_program = None


def provide(**functions) -> None:
    """Fill slots (called by the floor that owns each function, once, when it loads)."""
    for name, fn in functions.items():
        if name not in SLOTS:
            raise TypeError(f"core.late.provide: no slot named {name!r}")
        globals()[name] = fn


def missing() -> list[str]:
    """The slots no floor has filled yet."""
    return [name for name in SLOTS if globals()[name] is None]
