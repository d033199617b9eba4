"""Shared test settings: property-based tests draw the same examples on every run, so CI on a
fresh clone is deterministic (explore more with `pytest --hypothesis-seed=N`)."""

from hypothesis import settings

settings.register_profile("dongjing", derandomize=True)
settings.load_profile("dongjing")
