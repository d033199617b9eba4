"""Rendering DOT text to a picture with Graphviz's `dot` program (optional at run time)."""

from __future__ import annotations

import os
import shutil
import subprocess

from ..errors import DongjingError
from .dot import to_dot


class GraphvizMissing(DongjingError, RuntimeError):
    """Graphviz's `dot` program is not installed."""


def render(obj, path: str, format: str | None = None) -> str:
    """Draw `obj` (a tensor's tape, or a graph) to `path` (png, svg or pdf); returns the path.

    Needs Graphviz's `dot` program: on Debian/Ubuntu `apt-get install graphviz`. Without it,
    `dj.viz.to_dot(obj)` still gives the DOT text.
    """
    dot = shutil.which("dot")
    if dot is None:
        raise GraphvizMissing(
            "rendering needs Graphviz's `dot` program, which is not installed: on Debian or "
            "Ubuntu run `apt-get install graphviz` (dj.viz.to_dot(obj) gives the DOT text "
            "without it)"
        )
    format = format or os.path.splitext(path)[1].lstrip(".") or "png"
    subprocess.run([dot, f"-T{format}", "-o", path], input=to_dot(obj).encode(), check=True)
    return path
