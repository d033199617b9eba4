"""A training step of a static graph cut into the three phases a micro-batched pipeline runs:
the forward pass and the backward pass, once per micro-batch, and the update, once per step.

What the graph tells (`graph.backward_of` and `graph.gradient_of`, which `dj.gradients`
records): a node that differentiates a forward node is backward; a gradient of a Variable is
backward too, and its micro-batches' values are summed (weighted by their rows) before the
update reads it; a node computed from a gradient is the update (the optimizer's arithmetic and
assignments); a node computed from the batch rows and nothing backward is forward. Assignments
run once per step, in the update; one computed from the batch rows cannot (its value would
change from micro-batch to micro-batch), and neither can an update that reads the batch rows.

`split` cuts one rank's partition (`partition.py`) into a graph per phase: a value a later
phase reads becomes a placeholder of that phase's graph, fed what the earlier phase computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.registry import Kind
from ..graph.builder import placeholder
from ..graph.graph import Graph, Node
from .partition import COPIED, Partition
from .world import DistributedError

FORWARD, BACKWARD, UPDATE = 0, 1, 2
PHASES = ("forward", "backward", "update")
_SOURCES = ("placeholder", "constant", "variable")


def _is_assign(node) -> bool:
    return node.op.kind == Kind.EFFECT and "ref" in node.attrs


@dataclass
class Phases:
    """The phase of every node of the whole graph the fetches need (None for sources)."""

    of: dict  # node -> FORWARD | BACKWARD | UPDATE | None
    batched: set  # nodes whose value depends on the batch rows
    gradients: set  # gradients of Variables: summed over the micro-batches


def classify(graph: Graph, order: list, batch_inputs: list) -> Phases:
    """The phases of `order` (the nodes the fetches need, in graph order); a
    `DistributedError` for a step that micro-batches would change."""
    gradients = {n for n in order if n in graph.gradient_of}
    batched, of = set(batch_inputs), {}
    for n in order:
        if any(i in batched and i not in gradients for i in n.inputs):
            batched.add(n)  # (a gradient's summed value is the whole batch's)
        if n.op.name in _SOURCES:
            of[n] = None
            continue
        seen = [of[i] for i in n.inputs if of.get(i) is not None]
        if n in graph.backward_of or n in gradients:
            of[n] = BACKWARD
        elif any(i in gradients for i in n.inputs) or UPDATE in seen:
            of[n] = UPDATE
        elif BACKWARD in seen:
            of[n] = BACKWARD
        elif _is_assign(n):
            if n in batched:
                raise DistributedError(
                    f"micro-batches: assignment {n.name!r} sets Variable {n.inputs[0].name!r} to "
                    "a value computed from the batch rows (a running statistic?); micro-batches "
                    "would set it once each. Run this step with pipeline_chunks=1")
            of[n] = UPDATE  # once per step
        elif n.op.kind == Kind.EFFECT:
            of[n] = max(seen, default=UPDATE)
        else:
            of[n] = FORWARD
        if of[n] == UPDATE:
            for i in n.inputs:
                if i in batched and i not in gradients:
                    raise DistributedError(
                        f"micro-batches: the update {n.name!r} reads {i.name!r}, which is "
                        "computed from the batch rows but is not a gradient; it has no value "
                        "for the whole batch. Run this step with pipeline_chunks=1")
    return Phases(of, batched, gradients)


@dataclass
class PhaseGraph:
    """One phase of this rank's partition, as a graph of its own."""

    graph: Graph
    feeds: dict = field(default_factory=dict)  # placeholder here -> partition placeholder
    saved: dict = field(default_factory=dict)  # placeholder here -> partition node (earlier)
    gradients: dict = field(default_factory=dict)  # placeholder here -> partition gradient
    local: dict = field(default_factory=dict)  # partition node -> its node here
    targets: list = field(default_factory=list)  # nodes here to run: sends, effects, values


def local_phases(part: Partition, phases: Phases, rank: int) -> dict:
    """The phase of every node of the partition `part` of rank `rank` (None for sources): a
    node's is its origin's. A message goes in the phase its value is computed in (a
    Variable's value: the first phase that reads it there), and once per micro-batch or once
    per step on both ends: a recv runs in the first phase reading it, a value computed per
    micro-batch at the latest in the backward. A gradient's messages go once, in the update
    (its summed value)."""
    first_reader: dict = {}  # (value of the whole graph, rank) -> first phase reading it there
    for n, r in part.ranks.items():
        for i in n.inputs:
            phase = phases.of.get(n)
            if phase is not None and r >= 0:
                key = (i, r)
                first_reader[key] = min(first_reader.get(key, UPDATE), phase)

    def ends(u, dest: int) -> tuple[int, int]:  # (send phase, recv phase) of u going to dest
        if u in phases.gradients or phases.of.get(u) == UPDATE:
            return UPDATE, UPDATE
        wanted = first_reader.get((u, dest), UPDATE)
        if phases.of.get(u) is None and wanted == UPDATE:  # a Variable only the update reads
            return UPDATE, UPDATE
        sent = FORWARD if phases.of.get(u) is None else phases.of[u]
        return sent, max(sent, min(wanted, BACKWARD))

    of: dict = {}
    for n in part.graph.nodes:
        origin = part.origin.get(n)
        if n.op.name in _SOURCES:
            of[n] = None
        elif n.op.name == "send":
            of[n] = ends(origin, n.attrs["dest"])[0]
        elif n.op.name == "recv":
            of[n] = ends(origin, rank)[1]
        elif origin is not None and origin in phases.of:
            of[n] = phases.of[origin]
        else:  # a group the partition rebuilt: its effects' phase
            of[n] = max((of[i] for i in n.inputs if of.get(i) is not None), default=UPDATE)
    return of


def split(part: Partition, of: dict, phases: Phases, fetches: list) -> list[PhaseGraph]:
    """This rank's partition as one graph per phase; `fetches` are partition nodes (or None)
    each phase must give back (their values are combined by the caller)."""
    out = [PhaseGraph(Graph(f"{part.graph.name}:{name}")) for name in PHASES]
    wanted = [set() for _ in PHASES]  # partition nodes a phase must give back
    for n in part.graph.nodes:
        if of[n] is None:
            continue
        for i in n.inputs:
            if of.get(i) is not None and (of[i] < of[n] or (of[n] == UPDATE and
                                                            part.origin.get(i) in
                                                            phases.gradients)):
                wanted[of[i]].add(i)
    for f in fetches:
        if f is not None and of.get(f) is not None:
            wanted[of[f]].add(f)

    def bring(pg: PhaseGraph, phase: int, u: Node) -> Node:
        """`u` in phase `phase`'s graph: copied (sources), or a placeholder fed its value."""
        if u in pg.local:
            return pg.local[u]
        with pg.graph.as_default():
            if u.op.name == "placeholder":
                node = placeholder(u.shape, u.dtype, name=u.name)._node
                pg.feeds[node] = u
            elif u.op.name in _SOURCES:
                node = pg.graph.add_node(u.op, [], u.attrs, u.shape, u.dtype, u.name)
            else:
                node = placeholder(u.shape, u.dtype, name=f"{u.name}_in")._node
                gradient = phase == UPDATE and part.origin.get(u) in phases.gradients
                (pg.gradients if gradient else pg.saved)[node] = u
        node.rank = None
        pg.local[u] = node
        return node

    read = {i for n in part.graph.nodes for i in n.inputs}
    for n in part.graph.nodes:
        phase = of[n]
        if phase is None:
            continue
        pg = out[phase]
        inputs = [pg.local[i] if i in pg.local else bring(pg, phase, i) for i in n.inputs]
        node = pg.graph.add_node(n.op, inputs, n.attrs, n.shape, n.dtype, n.name)
        node.rank = None
        pg.local[n] = node
        if n.op.name == "send" or (n.dtype is None and (n in fetches or n not in read)):
            pg.targets.append(node)  # a message, an assignment or group nobody else runs
    for phase, pg in enumerate(out):
        for u in sorted(wanted[phase], key=lambda m: m.id):
            node = pg.local[u] if of.get(u) == phase else bring(pg, phase, u)
            if node not in pg.targets:
                pg.targets.append(node)
    for f in fetches:  # fetched sources (a placeholder, a Variable's value before the update)
        if f is not None and of.get(f) is None:
            node = bring(out[FORWARD], FORWARD, f)
            if node not in out[FORWARD].targets:
                out[FORWARD].targets.append(node)
    return out


def check_stage_order(order: list, ranks: dict, phases: Phases) -> None:
    """1F1B needs the stages in rank order: forward values go to higher ranks, their
    gradients to lower ones."""
    for n in order:
        r = ranks.get(n, COPIED)
        if r == COPIED:
            continue
        for i in n.inputs:
            s = ranks.get(i, COPIED)
            if s == COPIED or s == r or i.dtype is None:
                continue
            a, b = phases.of.get(i), phases.of.get(n)
            if (a == FORWARD and b == FORWARD and s > r) or (a == BACKWARD and b == BACKWARD
                                                              and s < r):
                raise DistributedError(
                    f"schedule '1f1b': {i.name!r} goes from rank {s} to rank {r} in the "
                    f"{'forward' if a == FORWARD else 'backward'} pass; 1F1B needs the stages "
                    "in rank order (forward values to higher ranks). Place the layers so, or "
                    "use schedule 'gpipe'")
