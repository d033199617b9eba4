"""Same answer first: compare a system's probes (loss, gradients, updated parameters) with the
reference's, so that a fast wrong answer is reported as a failure and never timed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.systems.base import Probe, Unavailable

TOLERANCE = 1e-4  # float32 with different summation orders stays well inside this
PROBE_STEPS = 2  # the second step checks the update (parameters and momentum) as well

# Errors meaning "this API is not implemented yet": skip the system with a note.
SKIP_ERRORS = (Unavailable, AttributeError, NotImplementedError, ImportError)


@dataclass
class CheckResult:
    """``status`` is "ok", "wrong" (answers differ), "skipped" (not available) or "error"."""

    status: str
    problems: list[str] = field(default_factory=list)
    note: str = ""
    max_error: float = 0.0


def relative_error(value: Any, ref: Any) -> float:
    """max |value - ref| / max(max |ref|, 1e-6); inf on a shape mismatch or a non-finite value."""
    a = np.asarray(value, dtype=np.float64)
    b = np.asarray(ref, dtype=np.float64)
    if a.shape != b.shape or not np.all(np.isfinite(a)):
        return float("inf")
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-6))


def compare(probes: list[Probe], refs: list[Probe], tol: float = TOLERANCE) -> tuple[
        list[str], float]:
    """Every disagreement beyond ``tol`` as a readable line, and the largest error seen."""
    problems: list[str] = []
    worst = 0.0
    for i, (p, r) in enumerate(zip(probes, refs)):
        items = [("loss", p.loss, r.loss)]
        for kind, mine, theirs in (("grad", p.grads, r.grads), ("param", p.params, r.params)):
            if set(mine) != set(theirs):
                problems.append(f"step {i}: {kind} names {sorted(mine)} != {sorted(theirs)}")
                continue
            items += [(f"{kind} {n}", mine[n], theirs[n]) for n in theirs]
        for what, mine, theirs in items:
            err = relative_error(mine, theirs)
            worst = max(worst, err)
            if not err <= tol:
                shape = np.shape(mine), np.shape(theirs)
                detail = f"shapes {shape[0]} vs {shape[1]}" if shape[0] != shape[1] else \
                    f"relative error {err:.3g}"
                problems.append(f"step {i}: {what}: {detail} (tolerance {tol:g})")
    return problems, worst


def probe_runner(build: Callable[[], Any], steps: int = PROBE_STEPS) -> tuple[Any, list[Probe]]:
    """Build a fresh runner and probe ``steps`` consecutive steps."""
    runner = build()
    return runner, [runner.probe() for _ in range(steps)]


def check_system(build: Callable[[], Any], refs: list[Probe],
                 tol: float = TOLERANCE) -> CheckResult:
    """Build and probe a system and compare it with the reference probes."""
    try:
        runner, probes = probe_runner(build, len(refs))
    except SKIP_ERRORS as e:
        return CheckResult("skipped", [f"{type(e).__name__}: {e}"])
    except Exception as e:  # any failure of a system is reported, not raised
        return CheckResult("error", [f"{type(e).__name__}: {e}"])
    problems, worst = compare(probes, refs, tol)
    note = getattr(runner, "note", "")
    return CheckResult("wrong" if problems else "ok", problems, note, worst)
