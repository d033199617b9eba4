"""The global random generator that `dj.manual_seed` seeds (initialization, dropout, shuffling)."""

from __future__ import annotations

import numpy as np

from ..backends import default_backend


class _Generator:
    rng = np.random.default_rng(0)
    seed = 0
    devices: dict = {}  # backend name -> its generator (made from `seed` on first use)


default = _Generator()


def manual_seed(seed: int) -> None:
    """Seed dongjing's random numbers (rand, randn, initialization, dropout, shuffling), on
    the CPU and on every device backend (`dj.cuda.manual_seed` seeds only CUDA's)."""
    default.seed = int(seed)
    default.rng = np.random.default_rng(int(seed))
    default.devices = {}


def seed_backend(backend, seed: int) -> None:
    """Seed the generator of one device backend (`dj.cuda.manual_seed`)."""
    default.devices[backend.name] = backend.generator(int(seed))


def generator_for(backend):
    """The seeded generator that draws arrays of `backend` (the CPU one for NumPy)."""
    if backend is default_backend():
        return default.rng
    rng = default.devices.get(backend.name)
    if rng is None:
        rng = default.devices[backend.name] = backend.generator(default.seed)
    return rng


def generator() -> np.random.Generator:
    """The NumPy generator behind dongjing's random numbers."""
    return default.rng
