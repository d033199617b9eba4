"""docs/backends.md: its Python blocks run, in order, in one namespace."""

import pathlib
import re

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "backends.md"


def test_backends_doc_blocks_run(capsys):
    text = re.sub(r"<!-- no-run:[^>]*-->\n```python\n.*?```", "", DOC.read_text(), flags=re.S)
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 6
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)  # the doc's own code
    out = capsys.readouterr().out
    assert "numpy numpy" in out and "[2. 0. 1.]" in out and "scatter_add" in out
    assert "True True" in out  # the GPU section's block, on whichever device is there
    assert "True\n" in out  # the static graph on the GPU (or the CPU) fetches its device's arrays
