"""Every ```python block of docs/jit.md is self-contained and runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "jit.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_page_has_examples():
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_block_runs(index, capsys):
    exec(compile(BLOCKS[index], f"jit.md block {index}", "exec"), {"__name__": "jit_doc"})
