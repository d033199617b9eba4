"""docs/distributed.md: its Python blocks run, in order, as one process (world size 1); a block
after `<!-- continue -->` runs in the namespace of the block before it."""

import pathlib
import re

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "distributed.md"


def test_distributed_doc_blocks_run(capsys):
    blocks = re.findall(r"(<!-- continue -->\n)?```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 12
    namespace: dict = {}
    for continues, block in blocks:
        if not continues:
            namespace = {}
        exec(compile(block, str(DOC), "exec"), namespace)  # the doc's own code
    out = capsys.readouterr().out
    assert "0 loaded ['bias', 'weight']" in out
    assert "0 1.1406\n1 1.1243\n2 1.0952" in out  # the static graph in 4 micro-batches
    assert "stage 1: .. F0 B0 F1 B1 F2 B2 F3 B3 .." in out
    assert "(32, 8) (3, 32)" in out and "plan: single over 1 rank(s)" in out
    # the Session's and dj.jit's distribute="auto", each planned alone and over a limit
    assert out.count("no plan over 1 rank(s) fits max_memory=32.00 KiB") == 2
    assert out.count("single 1\n") == 2
