"""Where a call came from in the user's code: the first frame outside the dongjing package
(graph nodes record it; errors and the profiler's `with_stack` name it)."""

from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_source_line() -> str | None:
    """`file:line` of the first caller frame outside the dongjing package."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return None
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
