"""The Python blocks of docs/onnx.md run, in order, in one namespace (from the repository root,
where the page's relative paths point)."""

from __future__ import annotations

import os
import re

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)


def test_onnx_page_blocks_run(monkeypatch, capsys):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    with open(os.path.join(ROOT, "docs", "onnx.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)
    assert len(blocks) >= 5
    monkeypatch.chdir(ROOT)
    namespace: dict = {"__name__": "docs_onnx"}
    for block in blocks:
        exec(compile(block, "docs/onnx.md", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "'0.weight'" in printed and "'If'" in printed and "dropout_mask" in printed
    assert "[2. 1. 1.] [2. 1. 1.]" in printed
