"""docs/distributed.md: its Python blocks run, in order, as one process (world size 1)."""

import pathlib
import re

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "distributed.md"


def test_distributed_doc_blocks_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 5
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})  # the doc's own code
    assert "0 loaded ['bias', 'weight']" in capsys.readouterr().out
