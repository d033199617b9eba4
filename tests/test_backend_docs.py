"""docs/backends.md: its Python blocks run, in order, in one namespace."""

import pathlib
import re

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "backends.md"


def test_backends_doc_blocks_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 3
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)  # the doc's own code
    out = capsys.readouterr().out
    assert "numpy numpy" in out and "[2. 0. 1.]" in out and "scatter_add" in out
