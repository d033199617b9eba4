"""docs/control-flow.md: its Python blocks run in order as one script (a real file, so dj.jit can
read the source it converts), and the converted source the page shows is what it prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "control-flow.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC.read_text(), flags=re.S)


def test_control_flow_page_runs_and_shows_its_converted_source(tmp_path):
    script = tmp_path / "docs_control_flow.py"
    script.write_text("\n".join(_blocks("python")))
    src = Path(__file__).resolve().parent.parent / "src"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=tmp_path, env={"PYTHONPATH": str(src), "PATH": ""}, timeout=120)
    assert done.returncode == 0, done.stderr
    (shown,) = _blocks("text")
    assert shown.strip() in done.stdout, done.stdout
    assert "variable 'y' is assigned only in the true branch" in done.stdout
