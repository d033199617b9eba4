"""`dj.profiler`: where the time goes, per eager op and per compiled node, as a table, a
timeline (Chrome trace) and an eager-versus-compiled comparison. See docs/profiling.md."""

from . import compiled  # noqa: F401  (installs the instrumented runs into core.profiler_hooks)
from .compare import Comparison, compare
from .events import Event
from .profile import ProfilerError, profile
from .ranks_trace import export_ranks_trace
from .record_function import record_function

__all__ = ["Comparison", "Event", "ProfilerError", "compare", "export_ranks_trace", "profile",
           "record_function"]
