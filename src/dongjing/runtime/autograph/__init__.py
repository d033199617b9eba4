"""Source conversion for `dj.jit`: Python `if` / `while` / `for` (with `break`, `continue`,
`return`), `and` / `or` / `not` and conditional expressions on tensors become graph control flow.

`convert.py` parses and compiles, `lower.py` and `control.py` rewrite the syntax tree,
`runtime.py` decides per construct at trace time (Python value: plain Python; symbolic tensor:
`graph_flow.py` builds `cond` / `while_loop`).
"""

from .convert import convert, converted_callable, entry, is_user_function, recording

__all__ = ["convert", "converted_callable", "entry", "is_user_function", "recording"]
