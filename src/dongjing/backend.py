"""The one seam through which ops reach their array library (NumPy today; CuPy could slot in)."""

import numpy as xp

__all__ = ["xp"]
