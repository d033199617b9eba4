"""The compiler's passes: each a function `(graph, fetches) -> PassResult`, one module each."""

from .eliminate_common_subexpressions import eliminate_common_subexpressions
from .eliminate_dead_code import eliminate_dead_code
from .fold_constants import fold_constants
from .simplify_algebra import simplify_algebra

__all__ = [
    "eliminate_common_subexpressions",
    "eliminate_dead_code",
    "fold_constants",
    "simplify_algebra",
]
