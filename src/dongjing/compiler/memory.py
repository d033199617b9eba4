"""Memory planning: liveness of every value, and reusable preallocated buffers for intermediates.

A node gets a buffer when its op can write into one (`forward_out`), its shape is fully known,
and it is not fetched. Values that may alias their inputs (views, opaque calls) keep those
inputs' storage alive as long as they live. A buffer is reused only once everything that may
share its storage is dead; fetched values and values committed to Variables live to the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .ir import numel

EXTERNAL = "external"  # feeds, constants and Variables: storage the program never writes


@dataclass
class MemoryPlan:
    """`buffer_of[node]` = buffer index; `buffers[i]` = (shape, dtype); `fresh`: nodes whose
    value is storage of this run alone (a fetch of them needs no copy)."""

    buffer_of: dict = field(default_factory=dict)
    buffers: list = field(default_factory=list)
    fresh: set = field(default_factory=set)
    bytes_planned: int = 0
    bytes_reused: int = 0


def allocates_fresh(node) -> bool:
    """The op returns new storage (never a view of an input)."""
    op = node.op
    return op.forward_out is not None or getattr(op, "fresh_output", False)


def can_write_into(node) -> bool:
    op = node.op
    if op.forward_out is None or node.dtype is None:
        return False
    n = numel(node.shape)
    if n is None or not node.shape:
        return False  # 0-d results come back as NumPy scalars; not worth a buffer
    if op.ufunc is not None and op.ufunc.nout == 1:
        kinds = {i.dtype for i in node.inputs}
        return kinds <= {node.dtype} or node.dtype.kind == "b"
    return True


def plan_memory(order: list, fetches: list, keep_to_end=()) -> MemoryPlan:
    """Assign buffers to the nodes of `order` (a schedule) with liveness-based reuse."""
    plan = MemoryPlan()
    end_of_run = len(order)
    last_use = {node: i for i, node in enumerate(order)}
    for i, node in enumerate(order):
        for inp in node.inputs:
            last_use[inp] = max(last_use.get(inp, 0), i)
    for node in list(fetches) + list(keep_to_end):
        last_use[node] = end_of_run
    fetched = set(fetches)
    roots: dict = {}
    for node in order:
        kind = node.op.kind
        if kind == "source":
            roots[node] = {EXTERNAL}
        elif allocates_fresh(node):
            roots[node] = {node}
        else:  # may be a view of any input (reshape, permute, opaque calls): shares their roots
            shared = {node}
            for inp in node.inputs:
                shared |= roots.get(inp, {EXTERNAL})
            roots[node] = shared
    root_end: dict = {}
    for node in order:
        for r in roots[node]:
            root_end[r] = max(root_end.get(r, 0), last_use[node])
    plan.fresh = {n for n in order if roots[n] == {n}}
    free: dict = {}  # (shape, dtype) -> ids of the buffers free now
    release_at: dict = {}  # step -> buffers whose last reader runs at that step
    for i, node in enumerate(order):
        if node.op.kind == "elementwise":
            _release(release_at.pop(i, ()), free, plan)  # in place over a dying input is safe
        if can_write_into(node) and node not in fetched:
            key = (tuple(node.shape), np.dtype(node.dtype))
            pool = free.get(key)
            if pool:
                buf = pool.pop()
                plan.bytes_reused += numel(node.shape) * key[1].itemsize
            else:
                buf = len(plan.buffers)
                plan.buffers.append(key)
                plan.bytes_planned += numel(node.shape) * key[1].itemsize
            plan.buffer_of[node] = buf
            plan.fresh.discard(node)
            end = root_end.get(node, i)
            if end < end_of_run:
                release_at.setdefault(max(end, i), []).append(buf)
        _release(release_at.pop(i, ()), free, plan)
    return plan


def _release(bufs, free, plan) -> None:
    for buf in bufs:
        free.setdefault(plan.buffers[buf], []).append(buf)
