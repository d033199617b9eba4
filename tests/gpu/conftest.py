"""GPU tests: collected by `pytest tests/gpu` (and by the whole suite), skipped unless
`dj.cuda.is_available()` (CuPy imports and sees a GPU). Run them on a GPU machine with
`PYTHONPATH=src python -m pytest tests/gpu`."""

from __future__ import annotations

import os

import pytest

import dongjing as dj

_HERE = os.path.dirname(os.path.abspath(__file__))


def pytest_collection_modifyitems(config, items):
    if dj.cuda.is_available():
        return
    from dongjing.backends.cupy import unavailable_reason

    skip = pytest.mark.skip(reason=f"needs a GPU: {unavailable_reason()}")
    for item in items:
        if os.path.dirname(os.path.abspath(str(item.fspath))) == _HERE:
            item.add_marker(skip)


@pytest.fixture
def cuda():
    """The CuPy backend."""
    from dongjing.backends import for_device_type

    return for_device_type("cuda")
