"""Pipeline schedules: the order in which one stage runs the forward (F) and backward (B) of
each micro-batch. Every stage follows its own list; sends are non-blocking and receives
block, and both orders below complete without deadlock for any number of stages and chunks.

- GPipe (Huang et al., 2019): every forward, then every backward (in reverse). A stage holds
  the activations of all `chunks` micro-batches at once.
- 1F1B (PipeDream-Flush, Narayanan et al., 2021): stage s runs `stages - s - 1` forwards to
  fill the pipe, then alternates one forward and one backward, then drains the backwards. A
  stage holds at most `stages - s` micro-batches' activations; the bubble is the same.
"""

from __future__ import annotations

SCHEDULES = ("gpipe", "1f1b")


def schedule_order(schedule: str, stage: int, stages: int, chunks: int) -> list[tuple[str, int]]:
    """The steps of `stage` (0-based, of `stages`) as ("F" | "B", micro-batch) pairs."""
    if schedule == "gpipe":
        return [("F", m) for m in range(chunks)] + [("B", m) for m in reversed(range(chunks))]
    if schedule == "1f1b":
        warmup = min(stages - stage - 1, chunks)
        order = [("F", m) for m in range(warmup)]
        for i in range(chunks - warmup):
            order += [("F", warmup + i), ("B", i)]
        order += [("B", m) for m in range(chunks - warmup, chunks)]
        return order
    raise ValueError(f"Pipe: schedule must be one of {SCHEDULES}, got {schedule!r}")


def peak_in_flight(order: list[tuple[str, int]]) -> int:
    """The most micro-batches whose forward ran and whose backward has not (activations held)."""
    held = peak = 0
    for kind, _ in order:
        held += 1 if kind == "F" else -1
        peak = max(peak, held)
    return peak


def timeline(schedule: str, stages: int, chunks: int) -> list[list[tuple[int, str]]]:
    """When each stage runs each step, every F and B taking one time unit: per stage, its
    (start time, "F3" or "B3") pairs. A forward waits for the stage before it, a backward for
    the stage after it (the last stage's for its own forward); the gaps are the bubble,
    (stages - 1) / (chunks + stages - 1) of the time."""
    orders = [schedule_order(schedule, s, stages, chunks) for s in range(stages)]
    done: dict = {}  # (kind, stage, micro-batch) -> end time
    free, position = [0] * stages, [0] * stages
    slots: list[list[tuple[int, str]]] = [[] for _ in range(stages)]
    while any(position[s] < len(orders[s]) for s in range(stages)):
        moved = False
        for s in range(stages):
            while position[s] < len(orders[s]):
                kind, m = orders[s][position[s]]
                if kind == "F":
                    after = ("F", s - 1, m) if s > 0 else None
                else:
                    after = ("B", s + 1, m) if s < stages - 1 else ("F", s, m)
                if after is not None and after not in done:
                    break
                start = max(free[s], done[after] if after else 0)
                done[(kind, s, m)] = free[s] = start + 1
                slots[s].append((start, f"{kind}{m}"))
                position[s] += 1
                moved = True
        if not moved:
            raise ValueError(f"schedule {schedule!r} cannot finish")  # never for these two
    return slots


def timeline_text(schedule: str, stages: int, chunks: int) -> list[str]:
    """`timeline` drawn one line per stage: a step's name where it runs, `..` where it waits."""
    slots = timeline(schedule, stages, chunks)
    width = max(start for stage in slots for start, _ in stage) + 1
    cell = max(len(name) for stage in slots for _, name in stage)
    lines = []
    for s, stage in enumerate(slots):
        row = [".".ljust(cell, ".")] * width
        for start, name in stage:
            row[start] = name.ljust(cell)
        lines.append(f"stage {s}: " + " ".join(row).rstrip())
    return lines
