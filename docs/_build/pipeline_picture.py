"""The pipeline-schedule picture: GPipe's and 1F1B's timelines (dongjing.distributed.schedules
.timeline, every step one time unit) drawn as plain SVG, one row per stage, so the bubble (the
empty cells) and 1F1B's early backwards are visible. docs/_build/pictures.py calls `draw`."""

from __future__ import annotations

import html

from dongjing.distributed.schedules import timeline

CELL, ROW, LEFT, TOP, GAP = 34, 24, 110, 30, 26
FORWARD, BACKWARD = "#4e79a7", "#e15759"


def _panel(schedule: str, stages: int, chunks: int, top: int) -> tuple[list[str], int]:
    slots = timeline(schedule, stages, chunks)
    width = max(start for stage in slots for start, _ in stage) + 1
    busy = sum(len(stage) for stage in slots)
    idle = stages * width - busy
    parts = [f'<text x="8" y="{top - 8}" font-weight="bold">{html.escape(schedule)}: '
             f'{stages} stages, {chunks} micro-batches, {width} time units, bubble '
             f'{idle}/{stages * width} of the cells</text>']
    for s, stage in enumerate(slots):
        y = top + s * ROW
        parts.append(f'<text x="8" y="{y + 16}">stage {s} (rank {s})</text>')
        parts.append(f'<rect x="{LEFT}" y="{y}" width="{width * CELL}" height="{ROW - 4}" '
                     'fill="#f4f4f4"/>')
        for start, name in stage:
            colour = FORWARD if name.startswith("F") else BACKWARD
            parts.append(f'<rect x="{LEFT + start * CELL}" y="{y}" width="{CELL - 2}" '
                         f'height="{ROW - 4}" fill="{colour}"/>')
            parts.append(f'<text x="{LEFT + start * CELL + CELL // 2 - 1}" y="{y + 15}" '
                         f'fill="white" text-anchor="middle">{html.escape(name)}</text>')
    return parts, width


def draw(stages: int = 4, chunks: int = 6) -> str:
    """An SVG of the GPipe and 1F1B timelines for `stages` stages and `chunks` micro-batches."""
    parts, widest, top = [], 0, TOP
    for schedule in ("gpipe", "1f1b"):
        panel, width = _panel(schedule, stages, chunks, top)
        parts += panel
        widest = max(widest, width)
        top += stages * ROW + GAP + 10
    legend_y = top - 6
    parts.append(f'<rect x="{LEFT}" y="{legend_y}" width="14" height="14" fill="{FORWARD}"/>'
                 f'<text x="{LEFT + 20}" y="{legend_y + 12}">F3: forward of micro-batch 3'
                 '</text>')
    parts.append(f'<rect x="{LEFT + 250}" y="{legend_y}" width="14" height="14" '
                 f'fill="{BACKWARD}"/><text x="{LEFT + 270}" y="{legend_y + 12}">B3: its '
                 'backward; grey: the stage waits (the bubble)</text>')
    width, height = LEFT + widest * CELL + 10, legend_y + 24
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'font-family="sans-serif" font-size="12">' + "".join(parts) + "</svg>\n")
