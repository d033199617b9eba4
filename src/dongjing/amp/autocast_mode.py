"""`dj.autocast` (PyTorch's `torch.autocast`, also `dj.amp.autocast`): a region in which
matrix products and convolutions run in a 16-bit floating dtype and the ops PyTorch keeps in
float32 (losses, and on CUDA also reductions, softmax, norms, exp/log/pow) run in float32.

Eagerly the casts happen as each op runs; while a graph is built (`dj.Graph`, `dj.jit`
tracing) they become `cast` nodes of the graph, so a Session runs what the region built.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from .. import dtypes
from ..core import autocast_state

if TYPE_CHECKING:
    from ..types import DTypeLike

_DEFAULT_DTYPE = {"cpu": "bfloat16", "cuda": "float16", "mps": "float16"}


def _default_dtype(device_type: str):
    name = _DEFAULT_DTYPE[device_type]
    return dtypes.require_bfloat16() if name == "bfloat16" else dtypes.float16


_P = ParamSpec("_P")
_R = TypeVar("_R")

class autocast:  # noqa: N801 - PyTorch's name
    """Run the ops inside in mixed precision, as `torch.autocast(device_type, dtype, enabled)`.

    `device_type`: "cpu", "cuda" or "mps" (the tensors it applies to); `dtype`: float16 or
    bfloat16 (default: bfloat16 on the CPU, float16 elsewhere). Regions nest; an inner region
    with `enabled=False` turns autocast off inside it. Also usable as a decorator.

    >>> import dongjing as dj
    >>> a, b = dj.ones(2, 3), dj.ones(3, 4)
    >>> with dj.autocast("cpu", dtype=dj.bfloat16):
    ...     c = a @ b
    >>> str(c.dtype)
    'bfloat16'
    """

    def __init__(self, device_type: str, dtype: DTypeLike | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise TypeError(f"autocast: device_type must be a string such as 'cpu' or 'cuda', "
                            f"got {type(device_type).__name__}")
        device_type = device_type.split(":")[0]
        if device_type not in _DEFAULT_DTYPE:
            raise ValueError(f"autocast: device_type {device_type!r} is not supported; expected "
                             f"one of {sorted(_DEFAULT_DTYPE)}")
        self.device_type = device_type
        self.fast_dtype = (_default_dtype(device_type) if dtype is None
                           else dtypes.as_dtype(dtype))
        self._enabled = bool(enabled)
        if self._enabled and self.fast_dtype not in dtypes.LOW_PRECISION:
            warnings.warn(f"In {device_type} autocast, but the target dtype {self.fast_dtype} is "
                          "not supported (float16 or bfloat16 are). Disabling autocast.",
                          UserWarning, stacklevel=2)
            self._enabled = False
        self.cache_enabled = True if cache_enabled is None else bool(cache_enabled)

    def __enter__(self):
        autocast_state.push(self.device_type, self._enabled, self.fast_dtype)
        return self

    def __exit__(self, *exc):
        autocast_state.pop()
        return False

    def __call__(self, fn: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(fn)
        def run_autocast(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return run_autocast


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for `device_type` in this thread now."""
    return autocast_state.active_dtype(device_type) is not None


def get_autocast_dtype(device_type: str):
    """The dtype autocast uses for `device_type`: the innermost region's, else the default
    (bfloat16 on the CPU, float16 on CUDA)."""
    found = autocast_state.region(device_type)
    return found[1] if found is not None else _default_dtype(device_type)
