"""The code blocks of docs/coming-from-pytorch.md run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).parent.parent / "docs" / "coming-from-pytorch.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


@pytest.mark.parametrize("source", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_doc_block_runs(source, capsys):
    exec(compile(source, str(DOC), "exec"), {})
    assert capsys.readouterr().out.strip()
