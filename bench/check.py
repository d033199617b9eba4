"""Same answer first: compare a system's probes (loss, gradients, updated parameters) with the
reference's, so that a fast wrong answer is reported as a failure and never timed."""

from __future__ import annotations

import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.systems.base import Probe, Unavailable

TOLERANCE = 1e-4  # float32 with different summation orders stays well inside this
PROBE_STEPS = 2  # the second step checks the update (parameters and momentum) as well
# After the first update each system continues from its own rounding of the parameters, and a
# ReLU pre-activation within rounding of 0 may fall on either side: one such unit moves W4's
# step-1 gradients by up to 3e-2. Later steps are held to this looser bound, and their update
# to the momentum rule on the system's own values (``momentum_problems``), which ties don't touch.
LATER_TOLERANCE = 5e-2
MOMENTUM_TOLERANCE = 1e-3

# Errors meaning "this API is not implemented yet": skip the system with a note.
SKIP_ERRORS = (Unavailable, AttributeError, NotImplementedError, ImportError)
LIBRARIES = ("dongjing", "torch", "jax")


def is_missing_api(e: BaseException) -> bool:
    """True for "not there yet": Unavailable, NotImplementedError, an ImportError, or an
    AttributeError looked up on a library's module or object (not, say, on None)."""
    if not isinstance(e, SKIP_ERRORS):
        return False
    if not isinstance(e, AttributeError):
        return True
    obj = getattr(e, "obj", None)
    module = obj.__name__ if isinstance(obj, types.ModuleType) else type(obj).__module__
    return module.split(".")[0] in LIBRARIES


def describe_error(e: BaseException) -> str:
    """``Type: message (file:line)`` of the innermost frame, to find where it was raised."""
    where = ""
    frames = traceback.extract_tb(e.__traceback__)
    if frames:
        f = frames[-1]
        where = f" ({'/'.join(f.filename.split('/')[-3:])}:{f.lineno})"
    return f"{type(e).__name__}: {e}{where}"


@dataclass
class CheckResult:
    """``status`` is "ok", "wrong" (answers differ), "skipped" (not available) or "error"."""

    status: str
    problems: list[str] = field(default_factory=list)
    note: str = ""
    max_error: float = 0.0


def relative_error(value: Any, ref: Any, floor: float = 1e-6) -> float:
    """max |value - ref| / max(max |ref|, floor); inf on a shape mismatch or a non-finite
    value."""
    a = np.asarray(value, dtype=np.float64)
    b = np.asarray(ref, dtype=np.float64)
    if a.shape != b.shape or not np.all(np.isfinite(a)):
        return float("inf")
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), floor))


# A gradient that is zero in exact arithmetic (W9's attention-score bias: softmax ignores a
# shift of every score) comes out as float32 rounding noise of the terms that cancel; it is
# measured against this fraction of the step's largest gradient instead of against itself.
GRADIENT_FLOOR = 1e-4


def _where_gradient_counts(mine: Any, theirs: Any, grad: Any, floor: float) -> tuple[Any, Any]:
    """The updated parameters where the reference's gradient is above rounding noise. Adam
    divides a gradient by its own size, so a parameter whose gradient is noise (zero in exact
    arithmetic, as W8's key biases: softmax ignores a shift of every score) takes a full step
    of either sign; those entries are left out of the comparison."""
    if grad is None or np.shape(grad) != np.shape(theirs) or np.shape(mine) != np.shape(theirs):
        return mine, theirs
    counts = np.abs(np.asarray(grad, np.float64)) > floor
    if counts.all():
        return mine, theirs
    return np.asarray(mine)[counts], np.asarray(theirs)[counts]


def _gradient_floor(grads: dict[str, Any]) -> float:
    sizes = [float(np.max(np.abs(np.asarray(g, np.float64)))) for g in grads.values()
             if np.size(g)]
    return max([1e-6] + [GRADIENT_FLOOR * s for s in sizes if np.isfinite(s)])


@dataclass
class Update:
    """The update rule of a training workload: initial parameters, learning rate, momentum."""

    initial: dict[str, np.ndarray]
    lr: float
    momentum: float


def compare(probes: list[Probe], refs: list[Probe], tol: float = TOLERANCE) -> tuple[
        list[str], float]:
    """Every disagreement beyond tolerance as a readable line, and the largest error seen.
    The loss, and everything of the first step, are held to ``tol``; later gradients and
    parameters to ``LATER_TOLERANCE``."""
    problems: list[str] = []
    worst = 0.0
    for i, (p, r) in enumerate(zip(probes, refs)):
        items = [("loss", p.loss, r.loss, tol, 1e-6)]
        later = tol if i == 0 else max(tol, LATER_TOLERANCE)
        floors = {"grad": _gradient_floor(r.grads), "param": 1e-6}
        for kind, mine, theirs in (("grad", p.grads, r.grads), ("param", p.params, r.params)):
            if set(mine) != set(theirs):
                problems.append(f"step {i}: {kind} names {sorted(mine)} != {sorted(theirs)}")
                continue
            for n in theirs:
                a, b = mine[n], theirs[n]
                if kind == "param":
                    a, b = _where_gradient_counts(a, b, r.grads.get(n), floors["grad"])
                items.append((f"{kind} {n}", a, b, later, floors[kind]))
        for what, mine, theirs, bound, floor in items:
            err = relative_error(mine, theirs, floor)
            worst = max(worst, err) if bound == tol else worst
            if not err <= bound:
                shape = np.shape(mine), np.shape(theirs)
                detail = f"shapes {shape[0]} vs {shape[1]}" if shape[0] != shape[1] else \
                    f"relative error {err:.3g}"
                problems.append(f"step {i}: {what}: {detail} (tolerance {bound:g})")
    return problems, worst


def momentum_problems(probes: list[Probe], update: Update,
                      tol: float = MOMENTUM_TOLERANCE) -> list[str]:
    """Check each step's change against momentum SGD on the system's own gradients: with
    d_k = p_k - p_(k-1) and d_0 = 0, d_(k+1) must equal momentum * d_k - lr * g_k."""
    problems = []
    before = {n: np.asarray(p, np.float64) for n, p in update.initial.items()}
    delta = {n: np.zeros_like(p) for n, p in before.items()}
    for i, probe in enumerate(probes):
        for n in before:
            if n not in probe.params or n not in probe.grads:
                continue  # reported by ``compare``
            after = np.asarray(probe.params[n], np.float64)
            grad = np.asarray(probe.grads[n], np.float64)
            predicted = update.momentum * delta[n] - update.lr * grad
            delta[n], before[n] = after - before[n], after
            err = relative_error(delta[n], predicted)
            if not err <= tol:
                problems.append(f"step {i}: param {n} does not follow momentum SGD "
                                f"(relative error {err:.3g})")
    return problems


def probe_runner(build: Callable[[], Any], steps: int = PROBE_STEPS) -> tuple[Any, list[Probe]]:
    """Build a fresh runner and probe ``steps`` consecutive steps."""
    runner = build()
    return runner, [runner.probe() for _ in range(steps)]


def check_system(build: Callable[[], Any], refs: list[Probe], tol: float = TOLERANCE,
                 update: Update | None = None) -> CheckResult:
    """Build and probe a system and compare it with the reference probes (and, for training
    workloads, with the momentum rule)."""
    try:
        runner, probes = probe_runner(build, len(refs))
    except Unavailable as e:
        return CheckResult("skipped", [str(e)])
    except Exception as e:  # any failure of a system is reported, not raised
        return CheckResult("skipped" if is_missing_api(e) else "error", [describe_error(e)])
    problems, worst = compare(probes, refs, tol)
    if update is not None:
        problems += momentum_problems(probes, update)
    note = getattr(runner, "note", "")
    return CheckResult("wrong" if problems else "ok", problems, note, worst)
