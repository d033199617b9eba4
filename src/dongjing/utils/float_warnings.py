"""NumPy's floating-point warnings from dongjing's own ops are not shown.

`dj.log(dj.zeros(1))` is `-inf` and `0 / 0` is NaN, silently, as in PyTorch and JAX: the
warning NumPy would print points into dongjing's dispatch, not at the user's line.
`dj.autograd.detect_anomaly()` (and `check_numerics`) find where a NaN or infinity appears.
Warnings of the user's own NumPy code, and dongjing's other warnings, are left alone.
"""

from __future__ import annotations

import warnings

MESSAGE = r"(divide by zero|invalid value|overflow|underflow) encountered"
MODULE = r"dongjing(\.|$)"


def install() -> None:
    """Add the filter (once) to the process's warning filters."""
    warnings.filterwarnings("ignore", message=MESSAGE, category=RuntimeWarning, module=MODULE)
