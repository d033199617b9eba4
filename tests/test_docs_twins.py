"""Every page of the site exists in English (docs/X.md) and Chinese (docs/X.zh.md), the
layout mkdocs-static-i18n builds into `/` and `/zh/`; a twin is a translation: the same code
blocks and markers (so it prints the same; tests/test_docs_blocks.py runs the English page's)
and the same pictures, in Chinese prose."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
FENCE = re.compile(r"^( *)```")
MARKER = re.compile(r"^\s*<!--\s*(continue|output|slow|no-run:.+?|requires:.+?)\s*-->\s*$")
PICTURE = re.compile(r"!\[[^\]]*\]\((pictures/[^)\s]+)\)")
CJK = re.compile(r"[\u4e00-\u9fff]")


def english_pages() -> list[str]:
    return sorted(p.name.removesuffix(".md") for p in DOCS.glob("*.md")
                  if not p.name.endswith(".zh.md"))


def chinese_pages() -> list[str]:
    return sorted(p.name.removesuffix(".zh.md") for p in DOCS.glob("*.zh.md"))


def fenced_blocks(text: str) -> list[str]:
    """The page's fenced blocks (code and output) and the markers tests/test_docs_blocks.py
    reads, in order, without their indentation (tabs indent)."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if MARKER.match(lines[i]):
            out.append(lines[i].strip())
        elif fence:
            j = i + 1
            while j < len(lines) and not lines[j].startswith(fence.group(1) + "```"):
                j += 1
            out.append("\n".join(line.strip() for line in lines[i:j + 1]))
            i = j
        i += 1
    return out


def test_every_page_has_its_twin():
    english, chinese = set(english_pages()), set(chinese_pages())
    assert english - chinese == set(), "English pages without docs/X.zh.md"
    assert chinese - english == set(), "Chinese pages without docs/X.md"


def test_no_page_lives_in_the_old_zh_folder():
    assert not (DOCS / "zh").exists(), "Chinese pages are docs/X.zh.md (mkdocs-static-i18n)"


@pytest.mark.parametrize("name", english_pages())
def test_the_twin_is_written_in_chinese_with_the_same_pictures(name):
    english = (DOCS / f"{name}.md").read_text(encoding="utf-8")
    chinese = (DOCS / f"{name}.zh.md").read_text(encoding="utf-8")
    prose = "\n".join(line for line in chinese.splitlines() if not line.startswith("|"))
    assert len(CJK.findall(prose)) > 40, f"{name}.zh.md is not in Chinese"
    assert set(PICTURE.findall(english)) == set(PICTURE.findall(chinese)), name


@pytest.mark.parametrize("name", english_pages())
def test_the_twin_shows_the_same_code_and_output(name):
    english = fenced_blocks((DOCS / f"{name}.md").read_text(encoding="utf-8"))
    chinese = fenced_blocks((DOCS / f"{name}.zh.md").read_text(encoding="utf-8"))
    assert chinese == english, f"{name}.zh.md's code blocks differ from {name}.md's"


def test_the_fenced_block_reader():
    page = ("a\n```python\nx = 1\n```\n=== \"Eager\"\n\n    <!-- continue -->\n"
            "    ```text\n    1\n    ```\n")
    assert fenced_blocks(page) == ["```python\nx = 1\n```", "<!-- continue -->",
                                   "```text\n1\n```"]
