"""A stand-in for CS 20's examples/utils.py (chiphuyen/stanford-tensorflow-tutorials, MIT): the
helpers the vendored tf1_cs20si_* programs import. `read_birth_life_data` gives 190 fixed
synthetic (birth rate, life expectancy) pairs shaped like data/birth_life_2010.txt (birth rates
1 to 7, life expectancy falling about 5.3 years per birth, plus noise) instead of reading the
file."""

from __future__ import annotations

import numpy as np


def read_birth_life_data(filename):
    """(data as a float32 array of [birth rate, life expectancy] rows, number of rows)."""
    rng = np.random.default_rng(2010)
    births = rng.uniform(1.0, 7.0, 190)
    lifes = 84.0 - 5.3 * births + rng.normal(0.0, 4.0, 190)
    data = np.asarray(list(zip(births, lifes)), dtype=np.float32)
    return data, len(data)

