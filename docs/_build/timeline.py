"""The profiler-timeline picture: dj.profiler events drawn as an SVG, one row per kind.

Drawn without Graphviz (plain SVG text), from a profile taken while the site is built, so it
shows this machine's timings; docs/_build/pictures.py calls `draw_timeline`.
"""

from __future__ import annotations

import html

ROWS = ("user", "op", "backward", "optimizer", "program", "node", "kernel")
COLOURS = {"user": "#9e9e9e", "op": "#4e79a7", "backward": "#e15759", "optimizer": "#59a14f",
           "program": "#f28e2b", "node": "#76b7b2", "kernel": "#b07aa1"}
WIDTH, LEFT, ROW, TOP = 900, 90, 26, 34


def _ticks(total_us: float) -> list[float]:
    """About five round tick values from 0 to total_us."""
    step = 10 ** max(0, len(str(int(total_us / 5))) - 1)
    for factor in (1, 2, 5, 10):
        if total_us / (step * factor) <= 6:
            step *= factor
            break
    return [step * i for i in range(int(total_us // step) + 1)]


def draw_timeline(events: list, title: str) -> str:
    """An SVG of `events` (dj.profiler Event objects of one thread) on one time axis."""
    rows = [kind for kind in ROWS if any(e.kind == kind for e in events)]
    start = min(e.start_ns for e in events)
    total_us = max((e.end_ns - start) / 1000 for e in events) or 1.0
    scale = (WIDTH - LEFT - 20) / total_us
    height = TOP + ROW * len(rows) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
             f'font-family="sans-serif" font-size="11">',
             f'<text x="{LEFT}" y="18" font-size="13">{html.escape(title)}</text>']
    for r, kind in enumerate(rows):
        y = TOP + r * ROW
        parts.append(f'<text x="{LEFT - 8}" y="{y + 16}" text-anchor="end">{kind}</text>')
        for e in sorted((e for e in events if e.kind == kind), key=lambda e: e.start_ns):
            x = LEFT + (e.start_ns - start) / 1000 * scale
            w = max(1.0, e.duration_us * scale)
            label = html.escape(f"{e.name} ({e.duration_us:.0f} µs)")
            parts.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{ROW - 6}" '
                         f'fill="{COLOURS[kind]}" stroke="white" stroke-width="0.5">'
                         f'<title>{label}</title></rect>')
            if w > 7 * len(e.name):
                parts.append(f'<text x="{x + 3:.1f}" y="{y + 16}" fill="white">'
                             f'{html.escape(e.name)}</text>')
    axis = TOP + ROW * len(rows) + 6
    parts.append(f'<line x1="{LEFT}" y1="{axis}" x2="{WIDTH - 20}" y2="{axis}" stroke="black"/>')
    for tick in _ticks(total_us):
        x = LEFT + tick * scale
        parts.append(f'<line x1="{x:.1f}" y1="{axis}" x2="{x:.1f}" y2="{axis + 4}" '
                     f'stroke="black"/><text x="{x:.1f}" y="{axis + 16}" '
                     f'text-anchor="middle">{tick:g} µs</text>')
    parts.append("</svg>\n")
    return "".join(parts)
