"""The documentation site builds with `mkdocs build --strict`: no broken link, reference or
docstring cross-reference, in English and Chinese."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    mkdocs = shutil.which("mkdocs", path=os.path.dirname(sys.executable)) or shutil.which("mkdocs")
    assert mkdocs, "mkdocs is importable but its command is not on PATH"
    site = tmp_path / "site"
    done = subprocess.run([mkdocs, "build", "--strict", "-d", str(site)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    for page in ("index.html", "zh/index.html", "data-loading/index.html"):
        assert (site / page).exists(), page
