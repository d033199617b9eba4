"""docs/debugging.md: its Python blocks run in order as one script and print what the page
says (anomaly errors, the two-line in-place error, threads, a generated program's frame)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "debugging.md"


def test_debugging_page_runs_and_prints_what_it_shows(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    script = tmp_path / "docs_debugging.py"
    script.write_text("\n".join(blocks))
    src = Path(__file__).resolve().parent.parent / "src"
    done = subprocess.run([sys.executable, "-W", "ignore", str(script)], capture_output=True,
                          text=True, cwd=tmp_path, env={"PYTHONPATH": str(src), "PATH": ""},
                          timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    lines = script.read_text().splitlines()

    def line_of(text: str) -> int:
        return next(i for i, line in enumerate(lines, 1) if text in line)

    assert "anomaly mode: sqrt produced NaN" in out
    assert f"the forward op ran at {script}:{line_of('the forward line the error names')}" in out
    assert "check_numerics: node 'log_0' (op 'log') produced inf" in out
    assert f"saved by mul at {script}:{line_of('saves b for backward')}" in out
    assert f"modified by mul_ at {script}:{line_of('changes b in place')}" in out
    assert "the gradient hook halve_and_sum" in out
    assert "True True" in out
    assert re.search(r"<dongjing-program-\d+> \d+ v\d+ = _getitem\(.*# %getitem_0  ", out)
    assert out.rstrip().endswith("True True")  # the short-path switch: the same bits
