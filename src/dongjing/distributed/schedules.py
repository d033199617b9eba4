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
