"""Where tape entries come from: the user's source line, found by walking past dongjing's own
frames. Recorded as (code object, line) only, so a tape node never keeps a frame (or its
locals) alive; formatted only when an error is raised."""

from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


_INSIDE: set = set()  # filenames seen inside / outside the package (set lookups are cheap)
_OUTSIDE: set = set()


def caller(depth: int = 2):
    """(code, instruction offset) of the first frame outside the dongjing package, or None.

    On the eager path for every recorded op, so it avoids the costly parts: the line number
    is decoded only when an error is raised (`describe`), filenames are classified once."""
    return outside_from(sys._getframe(depth))


def recording_site():
    """`caller()` as seen from the tape's `record`, made cheap for the common case.

    `record` runs under a dispatch function called by an op's binding, so the frame three up
    is usually the user's line: it is taken when its file is already known to lie outside
    the package, without materialising the frames between (each costs an allocation).
    Otherwise the walk starts at the binding. Code that calls a dispatch function itself,
    rather than an op, is named by its own caller's line."""
    try:
        frame = sys._getframe(4)  # recording_site <- record <- dispatch <- binding <- user
    except ValueError:  # a shallower stack: walk from the dispatch function's caller
        return outside_from(sys._getframe(3))
    code = frame.f_code
    if code.co_filename in _OUTSIDE:
        return code, frame.f_lasti
    return outside_from(sys._getframe(3))


def outside_from(frame):
    """(code, instruction offset) of `frame` or the first frame above it outside the package."""
    inside = _INSIDE
    while frame is not None:
        code = frame.f_code
        name = code.co_filename
        if name in inside:
            frame = frame.f_back
        elif name in _OUTSIDE:
            return code, frame.f_lasti
        elif name.startswith(_PACKAGE_DIR):
            inside.add(name)
        else:
            _OUTSIDE.add(name)
    return None


def _line(code, offset: int):
    for start, end, line in code.co_lines():
        if start <= offset < end:
            return line
    return code.co_firstlineno


def describe(where) -> str:
    """`file.py:12 (in fn)` for a `caller()` result; "an unknown line" for None."""
    if not where or where is True:
        return "an unknown line"
    code, offset = where
    return f"{code.co_filename}:{_line(code, offset)} (in {code.co_name})"


def note_modified(tensor, op_name: str) -> None:
    """Remember on `tensor`'s version counter which in-place op changed it last, and where
    (read only by the in-place error of the backward engine)."""
    version = tensor._version
    info = (op_name, caller(3))
    if len(version) == 1:
        version.append(info)
    else:
        version[1] = info


def modification(version: list) -> str:
    """How the tensor with this version counter was last modified, for an error message."""
    if len(version) > 1:
        op_name, where = version[1]
        return f"modified by {op_name} at {describe(where)}"
    return ("modified in place where no line was recorded (an optimizer step, a module "
            "update or a no_grad write)")
