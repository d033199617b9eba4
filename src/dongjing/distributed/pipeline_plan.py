"""The planner's pipeline: one stage per rank, the batch in micro-batches (chunks), and its
predicted step time with the bubble.

With M micro-batches over K stages, each stage runs the forward and backward of every
micro-batch (at its share of the rows) and sends the values its neighbours read; a stage waits
for the one before it (forward) and after it (backward). The step takes the time of one
micro-batch through every stage plus M - 1 more of the slowest stage: for balanced stages of t
each, (M + K - 1) t, of which (K - 1) t is the bubble, (K - 1) / (M + K - 1) of the step. The
update runs once, on every stage at once. More micro-batches shrink the bubble but pay each
node's fixed cost M times; `plan` takes the fastest of `CHUNKS` (or the chunks given). GPipe
and 1F1B take the same time; 1F1B holds at most K - s micro-batches' activations on stage s
(GPipe all of them), so it is the planner's choice when the stages run in rank order.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .cost_model import CostModel, node_cost, value_bytes
from .micro_batches import check_stage_order, classify
from .partition import COPIED
from .plan import Plan
from .schedules import SCHEDULES
from .world import DistributedError

if TYPE_CHECKING:
    from .micro_batches import Phases
    from .planner import Facts

CHUNKS = (1, 2, 4, 8, 16, 32)  # the micro-batch counts the planner weighs
_SOURCES = ("placeholder", "constant", "variable")


def micro_batching(facts: Facts) -> tuple[Phases | None, str]:
    """(the step's phases, "") when it can run in micro-batches, else (None, why not)."""
    if not facts.batch_inputs:
        return None, "no batch input to split into micro-batches"
    if facts.batch is None:
        return None, "the batch rows are not known"
    try:
        return classify(facts.order[0].graph, facts.order, facts.batch_inputs), ""
    except DistributedError as exc:
        return None, str(exc)


def _cuts(facts, ranks_of: dict, fetch_nodes: list, world: int) -> list:
    """(value node, from rank, to rank): the values a rank reads from another, then the
    fetches every rank gets."""
    cuts, seen = [], set()
    for n in facts.order:
        r = ranks_of[n]
        if r == COPIED:
            continue
        for i in n.inputs:
            s = ranks_of[i]
            if s != COPIED and s != r and i.dtype is not None and (i, r) not in seen:
                seen.add((i, r))
                cuts.append((i, s, r))
    for f in fetch_nodes:
        s = ranks_of.get(f, COPIED)
        if f.dtype is not None and s != COPIED:
            for r in range(world):
                if r != s and (f, r) not in seen:
                    seen.add((f, r))
                    cuts.append((f, s, r))
    return cuts


def _predict(facts, model: CostModel, world: int, ranks_of: dict, cuts: list, chunks: int):
    """(step seconds, compute seconds per rank, communication seconds) with `chunks`
    micro-batches."""
    rows = facts.batch or 1
    micro = math.ceil(rows / chunks)
    repeated = set(facts.forward) | set(facts.backward) | set(facts.gradients)
    per_micro, once = [0.0] * world, [0.0] * world
    for n in facts.order:
        if n.op.name in _SOURCES or n.dtype is None:
            continue
        r = ranks_of.get(n, 0)
        for w in (range(world) if r == COPIED else [r]):
            if n in repeated:
                per_micro[w] += node_cost(model, n, micro)
            else:
                once[w] += node_cost(model, n, rows)
    sent, sent_once = [0.0] * world, 0.0
    for value, src, _ in cuts:
        if value in repeated and chunks > 1:
            sent[src] += model.message_seconds(value_bytes(value, micro))
        else:
            sent_once += model.message_seconds(value_bytes(value, rows))
    stage = [per_micro[s] + sent[s] for s in range(world)]
    step = sum(stage) + (chunks - 1) * max(stage) + max(once) + sent_once
    compute = [chunks * per_micro[s] + once[s] for s in range(world)]
    return step, compute, chunks * sum(sent) + sent_once


def plan(facts: Facts, model: CostModel, world: int, fetch_nodes: list, placement: dict,
         ranks_of: dict, memory: list, names: list, chunks: int | None = None,
         schedule: str | None = None) -> Plan:
    """The pipeline plan of `placement` (stage r on rank r): the fastest predicted of the
    micro-batch counts `CHUNKS` (or `chunks`), with `schedule` (else 1F1B where the stages
    run in rank order, GPipe otherwise)."""
    rows = facts.batch or 1
    phases, why = micro_batching(facts)
    cuts = _cuts(facts, ranks_of, fetch_nodes, world)
    if phases is None:
        choices = [1]
    elif chunks is not None:
        choices = [min(chunks, rows)]
    else:
        choices = [c for c in CHUNKS if c <= rows]
    if schedule is None:
        schedule = "1f1b"
        if phases is not None:
            try:
                check_stage_order(facts.order, ranks_of, phases)
            except DistributedError:
                schedule = "gpipe"
    if schedule not in SCHEDULES:
        raise DistributedError(f"pipeline_schedule must be one of {SCHEDULES}, got "
                               f"{schedule!r}")
    predictions = {c: _predict(facts, model, world, ranks_of, cuts, c) for c in choices}
    best = min(choices, key=lambda c: (predictions[c][0], c))
    step, compute, comm = predictions[best]
    if best > 1 and schedule == "1f1b":  # stage s holds at most world - s micro-batches
        for s, m in enumerate(memory):
            held = min(world - s, best)
            m["activations"] = m["activations"] * held // best
            m["total"] = m["state"] + m["gradients"] + m["activations"]
    stages = " -> ".join(f"rank {r}" for r in range(world))
    if best == 1:
        text = (f"forward {stages}, backward in reverse, one micro-batch of {rows} rows"
                + (f" ({why})" if why and chunks not in (None, 1) else ""))
    else:
        bubble = (world - 1) / (best + world - 1)
        text = (f"{best} micro-batches of about {math.ceil(rows / best)} rows, {schedule}: "
                f"forward {stages}, backward in reverse; bubble (K-1)/(M+K-1) = "
                f"{bubble:.0%}; gradients summed over the micro-batches")
    text += "; each rank updates the Variables it holds"
    result = Plan("pipeline", world, facts.batch, names, memory, compute, comm, step, text,
                  [(v.name, s, r, value_bytes(v, rows)) for v, s, r in cuts],
                  placement=placement)
    result.chunks, result.pipeline_schedule = best, schedule if best > 1 else ""
    result.chunk_times = {c: predictions[c][0] for c in choices}
    return result
