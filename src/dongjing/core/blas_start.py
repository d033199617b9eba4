"""OpenBLAS's idle-thread timeout, shortened for this process when dongjing is what loads NumPy.

After each call OpenBLAS (NumPy's BLAS) keeps its threads spinning for 2^28 cycles (about a
tenth of a second) and they hold the other cores meanwhile, so dongjing's own two-thread work
started right after a matrix product (fused kernels, large ufuncs, `unfold2d`, pooling) gains
nothing. OpenBLAS reads ``OPENBLAS_THREAD_TIMEOUT`` once, when the library loads, so it can only
be set before NumPy is first imported. When dongjing is imported first and the variable is not
set, it is set to 20 (2^20 cycles, about 0.4 ms: back-to-back GEMMs still find their threads
awake) while NumPy loads, then removed again: the process's environment, and so its child
processes', stay as they were. A value of your own (``OPENBLAS_THREAD_TIMEOUT=28`` is OpenBLAS's
default) is always left alone; where NumPy was imported first nothing can change (see
docs/performance.md, "Settings that remain").
"""

from __future__ import annotations

import os
import sys

VARIABLE = "OPENBLAS_THREAD_TIMEOUT"
TIMEOUT = "20"

# whether this import is the one that loads NumPy (and so OpenBLAS), with no value of the user's
applied = "numpy" not in sys.modules and VARIABLE not in os.environ
if applied:
    os.environ[VARIABLE] = TIMEOUT
try:
    import numpy  # noqa: E402, F401  (loads OpenBLAS, which reads the variable now)
finally:
    if applied:
        os.environ.pop(VARIABLE, None)
