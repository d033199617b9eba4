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


@dataclass
class MemoryPlan:
    """`buffer_of[node]` = buffer index; `buffers[i]` = (shape, dtype); `fresh`: nodes whose
    value is storage of this run alone (a fetch of them needs no copy)."""

    buffer_of: dict = field(default_factory=dict)
    buffers: list = field(default_factory=list)
    fresh: set = field(default_factory=set)
    roots: dict = field(default_factory=dict)  # node -> the nodes whose storage it may share
    in_place: dict = field(default_factory=dict)  # value node -> the assign writing it in place
    bytes_planned: int = 0
    bytes_reused: int = 0


def kernel_output(node) -> bool:
    """An output of a fused kernel (written by the kernel into storage we give it)."""
    return node.op.name == "tuple_get" and node.inputs[0].op.kind == "fused"


def allocates_fresh(node) -> bool:
    """The op returns new storage (never a view of an input)."""
    return node.op.forward_out is not None or kernel_output(node)


def can_write_into(node) -> bool:
    op = node.op
    if kernel_output(node):
        return numel(node.shape) is not None and len(node.shape) > 0
    if op.forward_out is None or node.dtype is None:
        return False
    n = numel(node.shape)
    if n is None or not node.shape:
        return False  # 0-d results come back as NumPy scalars; not worth a buffer
    if op.ufunc is not None and op.ufunc.nout == 1:
        exact = all(i.dtype == node.dtype or i.dtype.kind == "b" for i in node.inputs)
        return exact or node.dtype.kind == "b"
    return True


def plan_memory(order: list, fetches: list, keep_to_end=(), unbuffered=()) -> MemoryPlan:
    """Assign buffers to the nodes of `order` (a schedule) with liveness-based reuse.

    `keep_to_end`: values read after the last step; `unbuffered`: values that never get a
    buffer (a generated loop computes them once, before its first iteration)."""
    plan = MemoryPlan()
    end_of_run = len(order)
    last_use = {node: i for i, node in enumerate(order)}
    for i, node in enumerate(order):
        inputs = node.inputs
        if node.op.kind == "effect" and "ref" in node.attrs:
            inputs = inputs[1:]  # an assignment reads only its target's shape and dtype
        for inp in inputs:
            last_use[inp] = max(last_use.get(inp, 0), i)
    for node in list(fetches) + list(keep_to_end):
        last_use[node] = end_of_run
    fetched = set(fetches)
    no_buffer = fetched | set(unbuffered)
    roots: dict = {}
    for node in order:
        if node.op.kind == "source" or allocates_fresh(node):
            roots[node] = {node}
        else:  # may be a view of any input (reshape, permute, opaque calls): shares their roots
            shared = {node}
            inputs = node.inputs
            if node.op.kind == "effect" and "ref" in node.attrs:
                inputs = inputs[1:]  # an assignment's value is a view of the value, not the target
            for inp in inputs:
                shared |= roots[inp]
            roots[node] = shared
    root_end: dict = {}
    for node in order:
        for r in roots[node]:
            root_end[r] = max(root_end.get(r, 0), last_use[node])
    plan.roots = roots
    plan.fresh = {n for n in order if roots[n] == {n} and n.op.kind != "source"}
    plan.in_place = _in_place_updates(order, fetched, root_end)
    free: dict = {}  # (shape, dtype) -> ids of the buffers free now
    release_at: dict = {}  # step -> buffers whose last reader runs at that step
    outputs_of: dict = {}
    for node in order:
        if kernel_output(node):
            outputs_of.setdefault(node.inputs[0], []).append(node)
    for i, node in enumerate(order):
        if node.op.kind == "elementwise" and node.op.ufunc is not None:
            _release(release_at.pop(i, ()), free, plan)  # a ufunc may write over a dying input
        # a kernel writes all its outputs at its own step: their buffers are taken here
        targets = outputs_of.get(node, ()) if node.op.kind == "fused" else (node,)
        for target in targets:
            if (can_write_into(target) and target not in no_buffer
                    and target not in plan.in_place and target not in plan.buffer_of):
                buf = _take(plan, free, target)
                end = root_end.get(target, i)
                if end < end_of_run:
                    release_at.setdefault(max(end, i), []).append(buf)
        _release(release_at.pop(i, ()), free, plan)
    return plan


def _cannot_fail(node) -> bool:
    op = node.op
    if op.kind in ("source", "effect"):
        return True
    return op.kind == "elementwise" and op.ufunc is not None and numel(node.shape) is not None


def _in_place_updates(order, fetched, root_end) -> dict:
    """Assignments whose value can be computed straight into the Variable's array.

    Safe when nothing reads the old value afterwards, the value is an elementwise ufunc of the
    Variable's shape and dtype, it is the only assignment to that Variable, and no step after
    it can fail (so a run that raises still changes no Variable).
    """
    last_unsafe = max((i for i, n in enumerate(order) if not _cannot_fail(n)), default=-1)
    index = {n: i for i, n in enumerate(order)}
    assigns: dict = {}
    reads: dict = {}
    for node in order:
        if node.op.kind == "effect" and "ref" in node.attrs:
            assigns.setdefault(id(node.attrs["ref"]), []).append(node)
        elif node.op.name == "variable":
            reads.setdefault(id(node.attrs["ref"]), []).append(node)
    chosen = {}
    for key, nodes in assigns.items():
        if len(nodes) != 1:
            continue
        assign = nodes[0]
        var, value = assign.inputs
        i = index[value]
        ok = (value.op.kind == "elementwise" and value.op.ufunc is not None
              and value not in fetched and value.shape == var.shape and value.dtype == var.dtype
              and numel(var.shape) is not None and i > last_unsafe
              and value.op.kind != "source"
              and all(root_end.get(r, 0) <= i for r in reads.get(key, [])))
        if ok:
            chosen[value] = assign
    return chosen


def _take(plan, free, node) -> int:
    """A free buffer of `node`'s shape and dtype, or a new one."""
    key = (tuple(node.shape), np.dtype(node.dtype))
    size = numel(node.shape) * key[1].itemsize
    pool = free.get(key)
    if pool:
        buf = pool.pop()
        plan.bytes_reused += size
    else:
        buf = len(plan.buffers)
        plan.buffers.append(key)
        plan.bytes_planned += size
    plan.buffer_of[node] = buf
    plan.fresh.discard(node)
    return buf


def _release(bufs, free, plan) -> None:
    for buf in bufs:
        free.setdefault(plan.buffers[buf], []).append(buf)
