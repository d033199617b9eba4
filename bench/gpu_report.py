"""The GPU benchmark's results as Markdown: the setup, one line per cell with its spread, check
and placement, then (last) the table of median µs per step, workloads by systems."""

from __future__ import annotations

from typing import Any

from bench.report import fmt_ratio, fmt_seconds, fmt_us
from bench.workloads import WORKLOADS

BASELINE = "torch"
SHORT = 70  # characters of a reason inside the table


def _clean(text: str, limit: int | None = None) -> str:
    text = text.replace("|", "/").replace("\n", " ")
    return text if limit is None or len(text) <= limit else text[:limit - 1] + "…"


def off_gpu(results: dict[str, Any], cell: dict[str, Any]) -> bool:
    """A cell of a GPU run whose arrays were not on the GPU (timed, but flagged)."""
    where = str(cell.get("placement", "")).lower()
    return results.get("target") == "cuda" and bool(where) and "cuda" not in where and \
        "gpu" not in where


def cell_text(results: dict[str, Any], cell: dict[str, Any] | None) -> str:
    if cell is None:
        return "–"
    status = cell["status"]
    if status == "ok":
        return fmt_us(cell["median_us"]) + (" (not on GPU!)" if off_gpu(results, cell) else "")
    return {"wrong": "**WRONG**"}.get(status, status)


def reasons(cells: list[dict[str, Any]], status: str) -> str:
    """Why a system's cells have ``status``: one reason, or one per workload if they differ."""
    found = {c["workload"]: (c.get("problems") or ["?"])[0] for c in cells
             if c["status"] == status}
    if len(set(found.values())) == 1:
        return next(iter(found.values()))
    return "; ".join(f"{k}: {why}" for k, why in found.items())


def by_key(results: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["workload"], c["system"]): c for c in results["cells"]}


def summary_table(results: dict[str, Any]) -> str:
    """Workloads by systems, median µs per step; a last row says why a system is unavailable."""
    systems, cells = results["systems"], by_key(results)
    lines = ["| workload | " + " | ".join(systems) + " |", "|---|" + "---:|" * len(systems)]
    for key in results["workloads"]:
        row = [cell_text(results, cells.get((key, s))) for s in systems]
        lines.append(f"| {key} {WORKLOADS[key].name} | " + " | ".join(row) + " |")
    why = []
    for s in systems:
        mine = [c for c in results["cells"] if c["system"] == s]
        text = reasons(mine, "unavailable") if any(
            c["status"] == "unavailable" for c in mine) else ""
        why.append(_clean(text, SHORT))
    if any(why):
        lines.append("| unavailable: why | " + " | ".join(why) + " |")
    return "\n".join(lines)


def detail_table(results: dict[str, Any]) -> str:
    """One line per cell: spread, ratio to the baseline, first call, check, placement, note."""
    cells = by_key(results)
    lines = [f"| workload | system | median µs | min–max µs | ÷ {BASELINE} | first call | check | "
             "arrays on | note |", "|---|---|---:|---:|---:|---:|---|---|---|"]
    for key in results["workloads"]:
        base = cells.get((key, BASELINE), {}).get("median_us")
        for s in results["systems"]:
            c = cells.get((key, s))
            if c is None:
                continue
            med = c.get("median_us")
            spread = f"{fmt_us(c.get('min_us'))}–{fmt_us(c.get('max_us'))}" if med else "–"
            check = c["status"]
            if check == "ok":
                check = f"ok ({c.get('max_error', 0):.0e})"
            note = "; ".join(x for x in (c.get("note"), c.get("data_note")) if x)
            if c.get("cut_repeats"):
                note = f"{c['cut_repeats']} repeat(s) cut short; " + note
            lines.append(f"| {key} | {s} | {cell_text(results, c)} | {spread} | "
                         f"{fmt_ratio(med, base)} | {fmt_seconds(c.get('first_call_s'))} | "
                         f"{check} | {_clean(str(c.get('placement', '–')))} | "
                         f"{_clean(note, 120)} |")
    return "\n".join(lines)


def problem_lines(results: dict[str, Any]) -> list[str]:
    """Every problem of every cell in full, once for all the workloads a system had it in."""
    seen: dict[tuple[str, str, str], list[str]] = {}
    for c in results["cells"]:
        for p in c.get("problems") or []:
            seen.setdefault((c["system"], c["status"], _clean(p)), []).append(c["workload"])
    return [f"- {system} {', '.join(keys)} ({status}): {problem}"
            for (system, status, problem), keys in seen.items()]


def versions_line(results: dict[str, Any]) -> str:
    seen: dict[str, str] = {}
    for c in results["cells"]:
        seen.update(c.get("versions") or {})
    return ", ".join(f"{k} {v}" for k, v in sorted(seen.items())) or "?"


def markdown(results: dict[str, Any]) -> str:
    """The whole report; the summary table comes last."""
    t = results.get("timing", {})
    parts = [
        "# dongjing GPU benchmark", "",
        f"- device: {results.get('device') or '?'} (`--device {results.get('target')}`)",
        f"- versions: {versions_line(results)}",
        f"- timing: each step ends synchronised (the device work finished); warm-up >= "
        f"{t.get('warmup_steps')} steps and {t.get('warmup_s')} s, then {t.get('repeats')} "
        f"repeats of ~{t.get('repeat_s')} s; median µs per step"
        + (" (--quick)" if results.get("quick") else "")
        + (" (--tiny sizes)" if results.get("tiny") else ""),
        "- check: 2 steps' loss, gradients and updated parameters against the CPU NumPy "
        "reference (bench/check.py) before timing; float32, TF32 off everywhere",
        f"- command: `{results.get('command')}` ({results.get('date')}, "
        f"{results.get('wall_s')} s)", "",
        "## Every cell", "",
        "First call: build plus the two checked steps (in the first cell of a system, also "
        "importing its library and starting CUDA).", "",
        detail_table(results), "",
    ]
    problems = problem_lines(results)
    if problems:
        parts += ["## Problems", "", *problems, ""]
    parts += ["## Median µs per step (lower is better)", "", summary_table(results), ""]
    return "\n".join(parts)
