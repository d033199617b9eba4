"""docs/profiling.md: its Python blocks run, in order, in one namespace."""

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "profiling.md"


def test_profiling_doc_blocks_run(capsys):
    pytest.importorskip("sklearn")
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) >= 6
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)  # the doc's own code
    out = capsys.readouterr().out
    assert "Self time total" in out and "op compute" in out and "source line" in out
