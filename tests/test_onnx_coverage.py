"""docs/onnx-coverage.md (and its Chinese page) are what tools/onnx_coverage.py writes from the
installed onnx package and the op table: regenerate them when either changes."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")

TOOL = Path(__file__).resolve().parent.parent / "tools" / "onnx_coverage.py"


def _tool():
    spec = importlib.util.spec_from_file_location("onnx_coverage", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_coverage_pages_are_current():
    # in a fresh process: the suite's own processes hold ops that tests declare or that
    # differentiating a loop adds, which the pages do not count
    done = subprocess.run([sys.executable, str(TOOL), "--check"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_figures_count_what_the_tables_list():
    tool = _tool()
    cov = tool.measure()
    text = tool.render(cov, "en")
    imported = text.split("## ONNX op types that import")[1].split("##")[0]
    n = imported.count("`") // 2
    assert f"**Import:** {n} of " in text
    assert "Conv" in cov.importable and "MatMul" in cov.importable
    assert cov.exports["matmul"] is None
