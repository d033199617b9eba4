"""A distribution plan (what `dj.Session(g, distribute="auto")` chose) and how it reads: as text
(`print(session.plan)`) and as a picture (`plan.to_dot()`, `dj.viz.render(plan, "plan.svg")`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .schedules import timeline_text

STRATEGIES = {
    "single": "one process runs the whole graph",
    "data": "data parallel: every rank runs the whole graph on its share of the batch rows; "
            "gradients averaged by all-reduce",
    "pipeline": "pipeline: consecutive layers form one stage per rank; activations go forward "
                "and their gradients back between stages",
    "tensor": "tensor parallel: paired products split column-then-row over the ranks (each "
              "holds and updates its shard of their weights); partial sums all-reduced",
    "replicated": "replicated: every rank runs the whole graph on the whole batch (no split "
                  "pays)",
}


def size_text(nbytes: float) -> str:
    """Bytes as B, KiB, MiB or GiB."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{int(nbytes)} B"


def time_text(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} us"


@dataclass
class Candidate:
    """One strategy the planner weighed: its prediction, and why it was or was not taken."""

    strategy: str
    predicted_s: float | None
    memory: list[int] = field(default_factory=list)  # bytes per rank
    note: str = ""

    @property
    def peak_memory(self) -> int:
        return max(self.memory) if self.memory else 0


@dataclass
class Plan:
    """How a graph's step is split over the ranks of the world it runs in."""

    strategy: str
    world: int
    batch: int | None
    rank_nodes: list[list[str]]  # per rank: the names of the compute nodes it runs
    memory: list[dict]  # per rank: {"state", "gradients", "activations", "total"} in bytes
    compute_s: list[float]  # per rank: predicted compute seconds of one step
    communication_s: float
    predicted_s: float
    schedule: str
    cuts: list[tuple[str, int, int, int]] = field(default_factory=list)  # (value, from, to, bytes)
    candidates: list[Candidate] = field(default_factory=list)
    cost_source: str = ""
    max_memory: int | None = None
    placement: dict | None = field(default=None, repr=False)  # pipeline: node -> its rank
    balance: str = ""  # pipeline: what its stages balance ("time" or "memory")
    layouts: object = field(default=None, repr=False)  # tensor: `sharding.Layouts`
    collectives: list = field(default_factory=list)  # tensor: (value, kind, bytes) per step
    shards: dict = field(default_factory=dict, repr=False)  # tensor: name -> this rank's shard
    chunks: int = 1  # pipeline: micro-batches per step
    pipeline_schedule: str = ""  # pipeline with chunks > 1: "gpipe" or "1f1b"
    chunk_times: dict = field(default_factory=dict, repr=False)  # pipeline: chunks -> seconds

    @property
    def memory_per_rank(self) -> list[int]:
        """Predicted bytes each rank holds (state, gradients and activations)."""
        return [m["total"] for m in self.memory]

    def __str__(self) -> str:
        lines = [f"plan: {self.strategy} over {self.world} rank(s) -- "
                 f"{STRATEGIES[self.strategy]}",
                 f"  batch {self.batch}; predicted step {time_text(self.predicted_s)} "
                 f"(communication {time_text(self.communication_s)}); "
                 f"costs {self.cost_source}"]
        if self.max_memory is not None:
            lines.append(f"  max_memory {size_text(self.max_memory)} per rank")
        lines.append(f"  schedule: {self.schedule}")
        if self.chunk_times and len(self.chunk_times) > 1:
            weighed = ", ".join(f"{c}: {time_text(t)}" for c, t in self.chunk_times.items())
            lines.append(f"  micro-batches weighed (predicted step): {weighed}")
        if self.strategy == "pipeline" and self.chunks > 1:
            lines.append("  timeline (F3/B3: forward/backward of micro-batch 3; .. waiting):")
            lines += ["    " + line for line in timeline_text(self.pipeline_schedule, self.world,
                                                            self.chunks)]
        for r, names in enumerate(self.rank_nodes):
            m = self.memory[r]
            shown = ", ".join(names[:8]) + (f", ... ({len(names)} nodes)" if len(names) > 8
                                              else "")
            lines.append(f"  rank {r}: {size_text(m['total'])} (state "
                         f"{size_text(m['state'])}, gradients {size_text(m['gradients'])}, "
                         f"activations {size_text(m['activations'])}); compute "
                         f"{time_text(self.compute_s[r])}; nodes: {shown}")
        for value, kind, nbytes in self.collectives[:12]:
            lines.append(f"  {kind}: {value} ({size_text(nbytes)})")
        if len(self.collectives) > 12:
            lines.append(f"  ... {len(self.collectives) - 12} more collectives")
        for value, src, dst, nbytes in self.cuts[:12]:
            lines.append(f"  cut: {value} rank {src} -> rank {dst} ({size_text(nbytes)})")
        if len(self.cuts) > 12:
            lines.append(f"  ... {len(self.cuts) - 12} more cut values")
        lines.append("  candidates:")
        for c in self.candidates:
            when = "-" if c.predicted_s is None else time_text(c.predicted_s)
            peak = "-" if not c.memory else size_text(c.peak_memory)
            mark = "*" if (c.strategy, c.predicted_s) == (self.strategy, self.predicted_s) else " "
            lines.append(f"   {mark} {c.strategy:<10} step {when:>11}  peak memory {peak:>10}"
                         f"  {c.note}")
        return "\n".join(lines)

    def to_dot(self) -> str:
        """DOT text of the plan: one box per rank (its nodes, memory and compute), an arrow for
        the values one rank sends another (how many, how many bytes), and for data parallelism
        the gradients' all-reduce. Draw it with `dj.viz.render(plan, "plan.svg")`."""
        lines = ["digraph plan {", '  rankdir=LR; node [fontname="Helvetica", shape=box, '
                 'style=rounded]; edge [fontname="Helvetica"];',
                 f'  label="{self.strategy} over {self.world} rank(s): predicted step '
                 f'{time_text(self.predicted_s)}"; labelloc=t;']
        rows = {"data": f"{self.batch // self.world if self.batch else 1} rows of "
                        f"{self.batch}", "pipeline": f"stage {{r}}, {self.batch} rows"
                + (f" in {self.chunks} micro-batches ({self.pipeline_schedule})"
                   if self.chunks > 1 else ""),
                "tensor": f"1/{self.world} of the split weights, {self.batch} rows"}
        for r, names in enumerate(self.rank_nodes):
            m = self.memory[r]
            what = rows.get(self.strategy, f"the whole batch ({self.batch} rows)").format(r=r)
            span = f"{names[0]} .. {names[-1]}" if names else "no forward nodes"
            lines.append(f'  rank{r} [label="rank {r}: {what}\\n{len(names)} forward nodes: '
                         f'{span}\\nmemory {size_text(m["total"])} (state '
                         f'{size_text(m["state"])}, activations '
                         f'{size_text(m["activations"])})\\ncompute '
                         f'{time_text(self.compute_s[r])}"];')
        if self.strategy in ("data", "tensor") and self.world > 1:
            what = ("all-reduce (mean) of the gradients" if self.strategy == "data" else
                    f"{len(self.collectives)} collective(s) of partial sums and split values")
            lines.append(f'  allreduce [label="{what}", shape=ellipse, style=solid];')
            for r in range(self.world):
                lines.append(f"  rank{r} -> allreduce [dir=both];")
        sent: dict = {}
        for _, src, dst, nbytes in self.cuts:
            count, total = sent.get((src, dst), (0, 0))
            sent[(src, dst)] = (count + 1, total + nbytes)
        for (src, dst), (count, total) in sorted(sent.items()):
            lines.append(f'  rank{src} -> rank{dst} [label="{count} values, '
                         f'{size_text(total)}", color={"blue" if src < dst else "red"}];')
        lines.append("}")
        return "\n".join(lines) + "\n"
