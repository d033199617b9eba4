"""Tracebacks of dongjing errors that start and end at the user's code.

A dongjing error (a `DongjingError`: a bad shape, dtype, feed, ...) is about the user's line,
but Python prints every frame between that line and the `raise` deep inside the op table. As
JAX filters its own frames, dongjing leaves out the frames of its own modules (and of the
programs it generates) when such an error reaches the top level uncaught, and says how many it
left out. `set_traceback_filtering("off")` or `DONGJING_TRACEBACK_FILTERING=off` in the
environment shows every frame. Errors that are not dongjing's are printed as they are.
"""

from __future__ import annotations

import os
import sys
import traceback
from types import TracebackType

from ..errors import DongjingError

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_GENERATED_PREFIX = "<dongjing-"
_MODES = ("on", "off")
_mode = "off" if os.environ.get("DONGJING_TRACEBACK_FILTERING", "").lower() in (
    "off", "0", "false", "no") else "on"


def set_traceback_filtering(mode: str) -> None:
    """"on" (the default): uncaught dongjing errors show only the caller's frames; "off":
    every frame, dongjing's own included."""
    global _mode
    if mode not in _MODES:
        raise ValueError(f"set_traceback_filtering: mode must be 'on' or 'off', got {mode!r}")
    _mode = mode


def traceback_filtering() -> str:
    """The current mode, "on" or "off"."""
    return _mode


def is_internal(filename: str) -> bool:
    """True for a file of the dongjing package or a program dongjing generated."""
    return filename.startswith(_PACKAGE_DIR) or filename.startswith(_GENERATED_PREFIX)


def filtered(tb: TracebackType | None) -> tuple[TracebackType | None, int]:
    """`tb` without dongjing's own frames, and how many were left out. A traceback made only
    of dongjing's frames keeps its last one (where the error was raised)."""
    kept: list[TracebackType] = []
    last, dropped = None, 0
    while tb is not None:
        last = tb
        if is_internal(tb.tb_frame.f_code.co_filename):
            dropped += 1
        else:
            kept.append(tb)
        tb = tb.tb_next
    if not kept and last is not None:
        kept, dropped = [last], dropped - 1
    rebuilt = None
    for entry in reversed(kept):
        rebuilt = TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return rebuilt, dropped


def _all_internal(tb: TracebackType | None) -> bool:
    while tb is not None:
        if not is_internal(tb.tb_frame.f_code.co_filename):
            return False
        tb = tb.tb_next
    return True


def _filter_chain(exc: BaseException, seen: set[int]) -> int:
    """Filter `exc` and the exceptions it was raised from or during; the frames dropped.

    A dongjing error raised while dongjing handled another exception inside itself (NumPy's
    ValueError turned into a ShapeError) shows only the dongjing error: the other one is an
    internal detail, kept on the exception and printed with filtering off.
    """
    if id(exc) in seen:
        return 0
    seen.add(id(exc))
    dropped = 0
    if isinstance(exc, DongjingError):
        for attr in ("__cause__", "__context__"):
            linked = getattr(exc, attr)
            if linked is not None and not isinstance(linked, DongjingError) and \
                    _all_internal(linked.__traceback__):
                dropped += _frame_count(linked.__traceback__)
                exc.__suppress_context__ = True
                if attr == "__cause__":
                    exc.__cause__ = None
        tb, count = filtered(exc.__traceback__)
        exc.__traceback__ = tb
        dropped += count
    for linked in (exc.__cause__, None if exc.__suppress_context__ else exc.__context__):
        if linked is not None:
            dropped += _filter_chain(linked, seen)
    return dropped


def _frame_count(tb: TracebackType | None) -> int:
    count = 0
    while tb is not None:
        count, tb = count + 1, tb.tb_next
    return count


def format_filtered(exc: BaseException) -> str:
    """The text Python would print for `exc`, with dongjing's frames left out as set."""
    dropped = _filter_chain(exc, set()) if _mode == "on" else 0
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if dropped:
        text += (f"(dongjing left out {dropped} frame{'s' if dropped != 1 else ''} of its own; "
                 "dj.set_traceback_filtering('off') or DONGJING_TRACEBACK_FILTERING=off shows "
                 "them)\n")
    return text


_previous_hook = None


def _involves_dongjing_error(exc: BaseException | None, seen: set[int]) -> bool:
    if exc is None or id(exc) in seen:
        return False
    seen.add(id(exc))
    return (isinstance(exc, DongjingError) or _involves_dongjing_error(exc.__cause__, seen)
            or _involves_dongjing_error(exc.__context__, seen))


def _excepthook(kind, exc, tb) -> None:
    if _mode == "on" and _involves_dongjing_error(exc, set()):
        exc.__traceback__ = tb
        sys.stderr.write(format_filtered(exc))
        return
    (_previous_hook or sys.__excepthook__)(kind, exc, tb)


def _ipython_handler(shell, kind, exc, tb, tb_offset=None):
    """IPython's and Jupyter's hook: their own formatting, of the filtered traceback."""
    if _mode == "on" and _involves_dongjing_error(exc, set()):
        exc.__traceback__ = tb
        dropped = _filter_chain(exc, set())
        shell.showtraceback((kind, exc, exc.__traceback__), tb_offset=tb_offset)
        if dropped:
            print(f"(dongjing left out {dropped} frames of its own; "
                  "dj.set_traceback_filtering('off') shows them)", file=sys.stderr)
    else:
        shell.showtraceback((kind, exc, tb), tb_offset=tb_offset)


def install() -> None:
    """Print uncaught dongjing errors filtered (chained to the hook already installed), in
    plain Python and, when dongjing is imported inside it, in IPython or Jupyter."""
    global _previous_hook
    if sys.excepthook is not _excepthook:
        _previous_hook = sys.excepthook
        sys.excepthook = _excepthook
    get_ipython = getattr(sys.modules.get("builtins"), "get_ipython", None)
    shell = get_ipython() if callable(get_ipython) else None
    if shell is not None and hasattr(shell, "set_custom_exc"):
        shell.set_custom_exc((DongjingError,), _ipython_handler)
