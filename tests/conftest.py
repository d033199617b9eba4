"""Shared test settings: property-based tests draw the same examples on every run, so CI on a
fresh clone is deterministic (explore more with `pytest --hypothesis-seed=N`); the compiler
verifies the graph after every pass."""

import os

import pytest
from hypothesis import settings

os.environ.setdefault("DONGJING_VERIFY_PASSES", "1")  # every pass's output graph is verified

settings.register_profile("dongjing", derandomize=True)
settings.load_profile("dongjing")


@pytest.fixture
def compiler_options():
    """`dj.compiler.set_options` for one test: the settings in force before come back after."""
    import dataclasses

    import dongjing as dj

    previous = dj.compiler.get_options()
    yield dj.compiler.set_options
    dj.compiler.set_options(**dataclasses.asdict(previous))
