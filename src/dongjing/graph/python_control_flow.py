"""Control flow helpers shared by the tensor and the graph."""

from __future__ import annotations

from .. import tensor as _tensor
from ..core.user_code import user_source_line
from ..errors import GraphError


def python_control_flow_error(tensor) -> GraphError:
    """The error for `if`/`while`/`bool()` on a symbolic tensor, naming the user's line."""
    where = user_source_line() or "?"
    return GraphError(
        f"Python control flow on the symbolic tensor {tensor.name!r} at {where}: its value is "
        "unknown while the graph is being built. Use dj.cond(pred, true_fn, false_fn) for `if` "
        "and dj.while_loop(cond, body, loop_vars) for `while`."
    )


_tensor.symbolic_bool_error = python_control_flow_error  # `bool()` of a symbolic tensor raises it
