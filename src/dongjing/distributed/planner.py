"""The compiler's distribution strategy: for one set of fetches of a static graph and the world
it runs in, weigh data parallelism, a pipeline of one stage per rank, tensor parallelism (the
paired products split over the ranks, `sharding.py`) and plain replication with the cost model
(`cost_model.py`), keep the ones whose memory per rank fits `max_memory`, and take the fastest
predicted (`choose`); a tensor split only when data parallelism does not fit.

What the graph tells the planner (`graph.gradient_of` and `graph.backward_of`, which
`dj.gradients` records): which nodes are the gradients of which Variables (data parallelism
averages them over the ranks), and which forward node each backward node differentiates (a
pipeline computes it on that node's stage). Forward nodes are split into stages in the order
they were built, balancing each stage's forward and backward cost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.registry import Kind
from . import pipeline_plan
from .cost_model import CostModel, node_cost, value_bytes
from .partition import COPIED, assign_ranks, needed
from .plan import Candidate, Plan, size_text
from .sharding import PARTIAL, conversion, follow, plan_layouts
from .world import DistributedError

_SOURCES = ("placeholder", "constant", "variable")
_UNITS = {"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1 << 10, "mib": 1 << 20,
          "gib": 1 << 30}


def parse_memory(value) -> int | None:
    """`max_memory=` as bytes: a number, or a string such as "64 MiB" or "2GB"."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return int(value)
    match = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", str(value))
    if match and match.group(2).lower() in _UNITS:
        return int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    raise DistributedError(f"max_memory={value!r}: give bytes per rank, a number or a string "
                           "such as '64 MiB' or '2 GB'")


@dataclass
class Facts:
    """What the planner reads off the graph for one set of fetches."""

    order: list  # the nodes the fetches need, in the order they were built
    forward: list  # compute nodes of the forward pass
    backward: dict  # backward node -> the forward node it differentiates
    gradients: dict  # gradient node -> its Variable node
    batch_inputs: list  # placeholders whose first dim is the batch (unknown when built)
    batch: int | None  # their fed row count


def _is_effect(node) -> bool:
    return node.dtype is None or node.op.kind == Kind.EFFECT


def analyse(graph, fetch_nodes: list, fed_rows: dict) -> Facts:
    """The facts of `graph` for `fetch_nodes`; `fed_rows` maps placeholders to fed row counts."""
    order = needed(fetch_nodes)
    backward = {n: graph.backward_of[n] for n in order if n in graph.backward_of}
    gradients = {n: graph.gradient_of[n] for n in order if n in graph.gradient_of}
    derived: set = set()  # the optimizer's updates: computed from gradients
    for n in order:
        if n not in backward and any(i in backward or i in gradients or i in derived
                                     for i in n.inputs):
            derived.add(n)
    compute = [n for n in order if n.op.name not in _SOURCES and not _is_effect(n)
               and n not in backward and n not in derived and n.op.kind != Kind.CONTROL]
    differentiated = set(backward.values())
    if differentiated:  # a training step: the forward pass is what the loss depends on
        reach = set(needed(list(differentiated)))
        compute = [n for n in compute if n in reach]
    forward = compute
    batch_inputs = [n for n in order if n.op.name == "placeholder" and n.shape
                    and n.shape[0] is None]
    rows = {fed_rows[n] for n in batch_inputs if n in fed_rows}
    if len(rows) > 1:
        raise DistributedError(f"distribute='auto': the batch inputs are fed different row "
                               f"counts {sorted(rows)}; feed every batch input the same rows")
    return Facts(order, forward, backward, gradients, batch_inputs, rows.pop() if rows else None)


def _weights(facts: Facts, model: CostModel, by: str) -> dict:
    """What each forward node weighs in a stage: its forward and backward time ("time"), or
    the bytes of its value and of the Variables it reads ("memory")."""
    batch = facts.batch or 1
    if by == "time":
        weight = {n: node_cost(model, n, batch) for n in facts.forward}
        for b, f in facts.backward.items():
            if f in weight:
                weight[f] += node_cost(model, b, batch)
        return weight
    weight, seen = {}, set()
    for n in facts.forward:
        state = [i for i in n.inputs if i.op.name == "variable" and i not in seen]
        seen.update(state)
        weight[n] = value_bytes(n, batch) + 3 * sum(value_bytes(v, batch) for v in state)
    return weight


def _stages(facts: Facts, weight: dict, ranks: int) -> dict | None:
    """Forward nodes in `ranks` consecutive stages of balanced `weight`, each backward node on
    its forward node's stage, each Variable and update with what it reads; None when there
    are fewer forward nodes than ranks."""
    if len(facts.forward) < ranks:
        return None
    total = sum(weight.values())
    placement, done = {}, 0.0
    for i, n in enumerate(facts.forward):
        left = len(facts.forward) - i
        stage = min(int(done / total * ranks) if total else 0, ranks - 1)
        stage = max(stage, ranks - left)  # leave at least one node for each later stage
        if i and placement[facts.forward[i - 1]] > stage:
            stage = placement[facts.forward[i - 1]]
        placement[n] = stage
        done += weight[n]
    for b, f in facts.backward.items():
        if f in placement:
            placement[b] = placement[f]
    readers: dict = {}
    for n in facts.order:
        for i in n.inputs:
            readers.setdefault(i, []).append(n)
    changed = True
    while changed:  # Variables and the optimizer's updates: with what they read or feed
        changed = False
        for n in facts.order:
            if n in placement or n.op.name in ("placeholder", "constant") or _is_effect(n):
                continue
            if n.op.name == "variable":  # its first placed reader, or the value assigned to it
                near = [placement[r] for r in readers.get(n, ()) if r in placement]
                near += [placement[r.inputs[1]] for r in readers.get(n, ())
                         if _is_effect(r) and len(r.inputs) > 1 and r.inputs[1] in placement]
            else:
                near = [placement[i] for i in n.inputs if i in placement]
            if near:
                placement[n] = near[0]
                changed = True
    return placement


def _memory(facts: Facts, ranks_of: dict, world: int, rows: int) -> list[dict]:
    """Bytes per rank: Variables (parameters and optimizer state), gradients, activations."""
    memory = [{"state": 0, "gradients": 0, "activations": 0} for _ in range(world)]
    forward = set(facts.forward)
    for n in facts.order:
        r = ranks_of.get(n, 0)
        where = range(world) if r == COPIED else [r]
        if n.op.name == "variable":
            part, nbytes = "state", value_bytes(n, rows)
        elif n in facts.gradients:
            part, nbytes = "gradients", value_bytes(n, rows)
        elif n in forward:  # kept for the backward pass
            part, nbytes = "activations", value_bytes(n, rows)
        else:
            continue
        for w in where:
            memory[w][part] += nbytes
    for m in memory:
        m["total"] = m["state"] + m["gradients"] + m["activations"]
    return memory


def _compute(facts: Facts, model: CostModel, ranks_of: dict, world: int, rows: int) -> list:
    seconds = [0.0] * world
    for n in facts.order:
        if n.op.name in _SOURCES or n.dtype is None:
            continue
        r = ranks_of.get(n, 0)
        for w in (range(world) if r == COPIED else [r]):
            seconds[w] += node_cost(model, n, rows)
    return seconds


def _names(facts: Facts, ranks_of: dict, world: int) -> list[list[str]]:
    names: list[list[str]] = [[] for _ in range(world)]
    for n in facts.forward:
        r = ranks_of.get(n, 0)
        for w in (range(world) if r == COPIED else [r]):
            names[w].append(n.name)
    return names


def _whole(facts: Facts, model: CostModel, world: int, strategy: str, rows: int,
           fetch_nodes: list) -> Plan:
    """Every rank runs every node (on `rows` rows): single, replicated or data parallel."""
    ranks_of = dict.fromkeys(facts.order, COPIED)
    memory = _memory(facts, ranks_of, world, rows)
    compute = _compute(facts, model, ranks_of, world, rows)
    comm = 0.0
    if strategy == "data":
        grads = sum(value_bytes(g, rows) for g in facts.gradients)  # one bucket per 25 MB
        buckets = -(-grads // (25 << 20))
        comm = buckets * model.all_reduce_seconds(grads / max(buckets, 1), world)
        comm += sum(model.all_reduce_seconds(value_bytes(f, rows), world) for f in fetch_nodes
                    if f.dtype is not None and f not in facts.gradients)
        schedule = (f"each rank: forward and backward of {rows} of the {facts.batch} rows, "
                    f"then the {len(facts.gradients)} gradients averaged in {buckets} bucketed "
                    "all-reduce(s), then the update")
    elif strategy == "replicated":
        schedule = "each rank: the whole step on the whole batch, no messages"
    else:
        schedule = "the whole step in this process"
    return Plan(strategy, world, facts.batch, _names(facts, ranks_of, world), memory, compute,
                comm, max(compute) + comm, schedule)


def _pipeline(facts: Facts, model: CostModel, world: int, fetch_nodes: list, placement: dict,
              chunks: int | None = None, schedule: str | None = None) -> Plan:
    rows = facts.batch or 1
    ranks_of = assign_ranks(facts.order, world, placement)
    return pipeline_plan.plan(facts, model, world, fetch_nodes, placement, ranks_of,
                              _memory(facts, ranks_of, world, rows),
                              _names(facts, ranks_of, world), chunks, schedule)


def _tensor(facts: Facts, model: CostModel, world: int, fetch_nodes: list, layouts) -> Plan:
    """Every rank runs the whole batch; the split values are computed, held and updated once
    per rank (a share of the work), plus the collectives the layouts insert."""
    rows = facts.batch or 1
    of = layouts.of
    memory = [{"state": 0, "gradients": 0, "activations": 0} for _ in range(world)]
    forward = set(facts.forward)
    compute, comm, moved = 0.0, 0.0, []
    for n in facts.order:
        split = isinstance(of.get(n), int) or (n.op.name == "matmul" and of.get(n) == PARTIAL)
        share = world if split else 1
        if n.op.name == "variable":
            memory[0]["state"] += value_bytes(n, rows) // share
        elif n in facts.gradients:
            memory[0]["gradients"] += value_bytes(n, rows) // share
        elif n in forward:
            memory[0]["activations"] += value_bytes(n, rows) // share
        if n.op.name not in _SOURCES and n.dtype is not None:
            compute += node_cost(model, n, rows) / share
    reads = {(i, w) for n, wants in layouts.inputs.items() for i, w in zip(n.inputs, wants)
             if i.dtype is not None}
    reads.update((f, None) for f in fetch_nodes if f.dtype is not None)
    for i, want in reads:
        for step in conversion(of[i], want):
            nbytes = value_bytes(i, rows)
            if step[0] == "split":
                compute += model.node_overhead_s + nbytes / world / model.bytes_per_s
                continue
            seconds = model.all_reduce_seconds(nbytes, world)
            comm += seconds if step[0] == "reduce" else seconds / 2
            moved.append((i.name, step[0], nbytes))
    memory[0]["total"] = sum(memory[0].values())
    memory = [dict(memory[0]) for _ in range(world)]
    names = [[n.name for n in facts.forward] for _ in range(world)]
    kinds = {}
    for _, kind, _ in moved:
        kinds[kind] = kinds.get(kind, 0) + 1
    sent = ", ".join(f"{count} {kind}(s)" for kind, count in sorted(kinds.items())) or "none"
    split = ", ".join(f"{v.name}[dim {d}]" for v, d in layouts.shards.items())
    schedule = (f"each rank: the whole step on all {rows} rows with 1/{world} of the split "
                f"Variables ({split}); collectives per step: {sent}")
    plan = Plan("tensor", world, facts.batch, names, memory, [compute] * world, comm,
                compute + comm, schedule)
    plan.layouts = layouts
    plan.collectives = moved
    return plan


def choose(facts: Facts, model: CostModel, world: int, fetch_nodes: list,
           max_memory: int | None = None, follow: Plan | None = None,
           chunks: int | None = None, schedule: str | None = None) -> Plan:
    """The fastest predicted plan whose memory per rank fits `max_memory` (bytes); a tensor
    split only where data parallelism does not fit (it holds no whole copy of the Variables).

    `follow`: the plan a session chose first. Later fetches keep its layout, since the
    Variables already live where it put them: a pipeline's stages (nodes it did not place go
    with their inputs), else the whole graph on every rank (data parallel where it applies)."""
    batch = facts.batch
    plans, candidates = [], []
    if follow is not None and world > 1:
        even = bool(facts.batch_inputs) and batch is not None and batch % world == 0
        if follow.strategy == "pipeline":
            plan = _pipeline(facts, model, world, fetch_nodes, follow.placement,
                             chunks or follow.chunks, schedule or follow.pipeline_schedule or None)
        elif follow.strategy == "tensor":
            plan = _tensor(facts, model, world, fetch_nodes, follow_shards(facts, follow))
        elif follow.strategy == "data" and even:
            plan = _whole(facts, model, world, "data", batch // world, fetch_nodes)
        else:
            plan = _whole(facts, model, world, "replicated", batch or 1, fetch_nodes)
        plan.candidates = [Candidate(plan.strategy, plan.predicted_s, plan.memory_per_rank,
                                     f"keeps the layout of the session's first plan "
                                     f"({follow.strategy})")]
        plan.cost_source, plan.max_memory = model.source, max_memory
        return plan
    if world == 1:
        plans.append(_whole(facts, model, 1, "single", batch or 1, fetch_nodes))
    else:
        if not facts.batch_inputs:
            candidates.append(Candidate("data", None, note="no batch input (a placeholder whose "
                                        "first dim is None)"))
        elif batch is None or batch % world:
            candidates.append(Candidate("data", None, note=f"the batch of {batch} rows does not "
                                        f"split evenly over {world} ranks"))
        else:
            plans.append(_whole(facts, model, world, "data", batch // world, fetch_nodes))
        loops = [n for n in facts.order if n.op.kind == Kind.CONTROL]
        if loops:
            candidates.append(Candidate("pipeline", None, note=f"the step runs {loops[0].op.name} "
                                        f"{loops[0].name!r}, whose sub-graphs the partitioner "
                                        "does not split (unroll the loop to pipeline it)"))
        for by in () if loops else ("time", "memory"):  # stages balanced by each: two plans
            placement = _stages(facts, _weights(facts, model, by), world)
            if placement is None:
                candidates.append(Candidate("pipeline", None, note=f"fewer forward nodes than "
                                            f"{world} ranks"))
                break
            plan = _pipeline(facts, model, world, fetch_nodes, placement, chunks, schedule)
            plan.schedule += f"; stages balanced by {by}"
            plan.balance = by
            plans.append(plan)
        layouts = plan_layouts(facts.order, facts.forward, set(facts.gradients.values()), world)
        if layouts is None:
            candidates.append(Candidate("tensor", None, note=f"no pair of products of a "
                                        f"Variable weight splits evenly over {world} ranks"))
        else:
            plans.append(_tensor(facts, model, world, fetch_nodes, layouts))
        plans.append(_whole(facts, model, world, "replicated", batch or 1, fetch_nodes))
    fits_data = any(p.strategy == "data" and (max_memory is None
                                              or max(p.memory_per_rank) <= max_memory)
                    for p in plans)
    for p in plans:
        fits = max_memory is None or max(p.memory_per_rank) <= max_memory
        notes = []
        if p.strategy == "pipeline":
            notes.append(f"stages balanced by {p.balance}" + (
                f", {p.chunks} micro-batches ({p.pipeline_schedule})" if p.chunks > 1 else ""))
        if p.strategy == "tensor":
            notes.append(f"{len(p.layouts.pairs)} product pair(s) split, "
                         f"{len(p.collectives)} collective(s) per step")
        if max_memory is not None:
            notes.append("fits" if fits else f"needs more than max_memory {size_text(max_memory)}")
        if p.strategy == "tensor" and fits_data:
            notes.append("not taken: data parallelism fits (a tensor split is for what does not)")
        note = "; ".join(notes)
        candidates.append(Candidate(p.strategy, p.predicted_s, p.memory_per_rank, note))
    fitting = [p for p in plans if (max_memory is None or max(p.memory_per_rank) <= max_memory)
               and not (p.strategy == "tensor" and fits_data)]
    if not fitting:
        least = min(plans, key=lambda p: max(p.memory_per_rank))
        raise DistributedError(
            f"distribute='auto': no plan over {world} rank(s) fits max_memory="
            f"{size_text(max_memory)} per rank; the smallest, {least.strategy}, needs "
            f"{size_text(max(least.memory_per_rank))} on its fullest rank "
            f"({max(least.memory_per_rank)} bytes)")
    best = min(fitting, key=lambda p: p.predicted_s)
    best.candidates = sorted(candidates, key=lambda c: (c.predicted_s is None,
                                                        c.predicted_s or 0))
    best.cost_source = model.source
    best.max_memory = max_memory
    return best


def follow_shards(facts: Facts, first: Plan):
    """The layouts of later fetches in a tensor plan's split (its Variables stay split)."""
    refs = {id(v.attrs["ref"]): d for v, d in first.layouts.shards.items()}
    return follow(facts.order, refs)
