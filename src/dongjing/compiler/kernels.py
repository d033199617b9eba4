"""The kernel library behind fused elementwise groups: numba (optional), compiled once per
kernel source and cached; without numba the fusion pass leaves groups as NumPy calls."""

from __future__ import annotations

import importlib.util

_cache: dict = {}
_numba = None


def available() -> bool:
    """True when numba can be imported (checked without importing it)."""
    return importlib.util.find_spec("numba") is not None


def compile_kernel(source: str, name: str, namespace: dict):
    """The numba-compiled function `name` defined by `source` (cached by source text)."""
    global _numba
    key = source
    kernel = _cache.get(key)
    if kernel is not None:
        return kernel
    if _numba is None:
        import numba

        _numba = numba
    scope = dict(namespace)
    exec(compile(source, f"<dongjing-kernel-{name}>", "exec"), scope)  # our generated source
    kernel = _numba.njit(scope[name], nogil=True, error_model="numpy", cache=False)
    _cache[key] = kernel
    return kernel
