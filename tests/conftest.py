"""Shared test settings: property-based tests draw the same examples on every run, so CI on a
fresh clone is deterministic (explore more with `pytest --hypothesis-seed=N`); the compiler
verifies the graph after every pass."""

import os

from hypothesis import settings

os.environ.setdefault("DONGJING_VERIFY_PASSES", "1")  # every pass's output graph is verified

settings.register_profile("dongjing", derandomize=True)
settings.load_profile("dongjing")
