"""The global random generator that `dj.manual_seed` seeds (initialization, dropout, shuffling)."""

from __future__ import annotations

import numpy as np


class _Generator:
    rng = np.random.default_rng(0)
    seed = 0


default = _Generator()


def manual_seed(seed: int) -> None:
    """Seed dongjing's random numbers (rand, randn, initialization, dropout, shuffling)."""
    default.seed = int(seed)
    default.rng = np.random.default_rng(int(seed))


def generator() -> np.random.Generator:
    """The NumPy generator behind dongjing's random numbers."""
    return default.rng
