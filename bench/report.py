"""Results as Markdown tables, JSON and a bar chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.threads import TUNED_VARS

REFERENCE = "numpy"
EAGER = "dj-eager"


def fmt_us(us: float | None) -> str:
    """Microseconds, three significant digits below 100, thousands separators above."""
    if us is None:
        return "–"
    return f"{us:.3g}" if us < 100 else f"{us:,.0f}"


def fmt_ratio(value: float | None, base: float | None) -> str:
    if value is None or not base:
        return "–"
    return f"{value / base:.2f}"


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "–"
    return f"{s * 1e3:,.1f} ms" if s < 1 else f"{s:.2f} s"


def fmt_first_call(entry: dict[str, Any]) -> str:
    s = entry.get("first_call_s")
    if s is None:
        return "–"
    return fmt_seconds(s) + (" (compile)" if entry.get("compiled") else "")


def fmt_mb(mb: float | None) -> str:
    return "–" if mb is None else f"{mb:,.1f}"


def first_call_cell(entry: dict[str, Any]) -> str:
    """The first call in a fresh process, and with a warm kernel cache where measured."""
    text = fmt_seconds(entry.get("first_call_s"))
    cached = entry.get("first_call_cached_s")
    return text if cached is None else f"{text} / {fmt_seconds(cached)}"


def cell(entry: dict[str, Any]) -> str:
    """A system's median, or why there is none."""
    status = entry["status"]
    if status in ("ok", "floor") and "median_us" in entry:
        return fmt_us(entry["median_us"])
    return {"wrong": "**WRONG**", "error": "error", "skipped": "skipped"}.get(status, status)


def system_order(runs: list[dict[str, Any]]) -> list[str]:
    """Systems in first-seen order, leaving out those skipped in every run."""
    names: list[str] = []
    for run in runs:
        for e in run["systems"]:
            if e["system"] not in names:
                names.append(e["system"])
    shown = {e["system"] for run in runs for e in run["systems"] if e["status"] != "skipped"}
    return [n for n in names if n in shown]


def summary_table(runs: list[dict[str, Any]], fmt: Any = cell) -> str:
    """Workloads by systems: median µs per step (or what ``fmt`` makes of each entry)."""
    names = system_order(runs)
    lines = ["| workload | threads | " + " | ".join(names) + " |",
             "|---|---:|" + "---:|" * len(names)]
    for run in runs:
        by = {e["system"]: e for e in run["systems"]}
        cells = [fmt(by[n]) if n in by else "–" for n in names]
        lines.append(f"| {run['workload']} {run['name']} | {run['threads']} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def detail_table(run: dict[str, Any]) -> str:
    """One workload at one thread count: spread, ratios, first call, check, notes."""
    by = {e["system"]: e for e in run["systems"]}
    ref = by.get(REFERENCE, {}).get("median_us")
    eager = by.get(EAGER, {}).get("median_us")
    load = run.get("load") or []
    loads = " → ".join(f"{x:.2f}" for x in load if x is not None)
    label = ", tuned settings" if _tuned(run) else ""
    lines = [f"### {run['workload']} {run['name']}, {run['threads']} thread(s){label}", "",
             f"Sizes {run.get('sizes') or 'as defined'}; 1-minute load average {loads or '?'}.",
             "",
             "| system | median µs | min–max µs | ÷ NumPy | ÷ dj-eager | first call | cached "
             "kernels | peak RSS +MiB | check | note |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for e in run["systems"]:
        med = e.get("median_us")
        spread = f"{fmt_us(e.get('min_us'))}–{fmt_us(e.get('max_us'))}" if med else "–"
        check = e["status"] if e["status"] != "ok" else f"ok ({e.get('max_error', 0):.0e})"
        if e["status"] == "floor":
            check = "not checked (a floor)"
        note = e.get("note") or ""
        if e.get("cut_repeats"):
            note = f"{e['cut_repeats']} repeat(s) cut by the time limit; " + note
        if e.get("fresh_error"):
            note = (note + " " if note else "") + e["fresh_error"]
        if e["status"] != "ok" and e.get("problems"):
            note = (note + " " if note else "") + "; ".join(e["problems"][:2])
        note = note.replace("|", "/").replace("\n", " ")[:160]
        lines.append(f"| {e['system']} | {cell(e)} | {spread} | {fmt_ratio(med, ref)} | "
                     f"{fmt_ratio(med, eager)} | {fmt_first_call(e)} | "
                     f"{fmt_seconds(e.get('first_call_cached_s'))} | "
                     f"{fmt_mb(e.get('rss_growth_mb'))} | {check} | {note} |")
    return "\n".join(lines)


def machine_lines(results: dict[str, Any]) -> str:
    m = results.get("machine", {})
    blas = "; ".join(
        f"{b.get('internal_api')} {b.get('version')} ({b.get('architecture')}, "
        f"{b.get('threading_layer')})" for b in m.get("blas", []) if b.get("internal_api")
    ) or "unknown"
    versions = ", ".join(f"{k} {v}" for k, v in m.get("versions", {}).items() if v)
    timing = results.get("timing", {})
    return "\n".join([
        f"- machine: {m.get('cpu', '?')}, {m.get('cores', '?')} cores; Python {m.get('python')}",
        f"- BLAS used by NumPy: {blas}",
        f"- versions: {versions}",
        f"- timing: {timing.get('repeats')} repeats of ~{timing.get('repeat_s')} s after "
        f">= {timing.get('warmup_steps')} steps / {timing.get('warmup_s')} s of warm-up"
        + (" (--quick)" if results.get("quick") else ""),
        f"- command: `{results.get('command')}` ({results.get('date')}, {results.get('wall_s')} s)",
    ])


def _tuned(run: dict[str, Any]) -> bool:
    return run.get("env") == "tuned"


def markdown(results: dict[str, Any]) -> str:
    """The whole report: setup, the summary table (the default environment: no tuning variable
    set), the tuned table when measured, then one detail table per run."""
    runs = [r for r in results["runs"] if not _tuned(r)]
    tuned = [r for r in results["runs"] if _tuned(r)]
    parts = ["# dongjing benchmark results", "", machine_lines(results), "",
             "Median µs per step (lower is better), every system in the environment a user "
             "has (no tuning variable set); ÷ columns: this system's median divided "
             "by the baseline's (below 1 = faster).", "", summary_table(runs), "",
             "First call (build + first step) in a fresh process; for compiled systems, "
             "with an empty kernel cache / with the kernels cached on disk by a first process:",
             "", summary_table(runs, first_call_cell), "",
             "Peak resident memory growth (MiB) over the first call and three more steps, in "
             "a fresh process (libraries loaded by the first call count) / of a step alone "
             "above what stays resident after the first call:", "",
             summary_table(runs, lambda e: fmt_mb(e.get("rss_growth_mb")) + " / "
                           + fmt_mb(e.get("step_peak_mb"))), ""]
    if tuned:
        settings = ", ".join(f"{k}={v}" for k, v in TUNED_VARS.items())
        parts += ["## Tuned settings", "",
                  f"The same, every system with {settings} (`--tuned`; not what a user's "
                  "script gets):", "", summary_table(tuned), ""]
    for err in results.get("errors", []):
        parts += [f"**{err}**", ""]
    for run in results["runs"]:
        parts += [detail_table(run), ""]
    return "\n".join(parts)


def plot(results: dict[str, Any], path: Path) -> bool:
    """Bars of time ÷ NumPy per workload (log scale); False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    runs = [r for r in results["runs"] if not _tuned(r)]
    names = system_order(runs)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(runs)), 4))
    width = 0.8 / max(1, len(names))
    for j, name in enumerate(names):
        xs, ys = [], []
        for i, run in enumerate(runs):
            by = {e["system"]: e for e in run["systems"]}
            ref = by.get(REFERENCE, {}).get("median_us")
            med = by.get(name, {}).get("median_us")
            if med and ref:
                xs.append(i + (j - (len(names) - 1) / 2) * width)
                ys.append(med / ref)
        ax.bar(xs, ys, width, label=name)
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels([f"{r['workload']} {r['name']}\n{r['threads']} thr" for r in runs],
                       fontsize=8)
    ax.set_ylabel("time per step ÷ hand-written NumPy")
    ax.set_title("dongjing benchmarks (lower is better)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_all(results: dict[str, Any], out_dir: Path) -> str:
    """Write results.json, results.md and results.png (if matplotlib); return the Markdown."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    text = markdown(results)
    (out_dir / "results.md").write_text(text)
    plot(results, out_dir / "results.png")
    return text
