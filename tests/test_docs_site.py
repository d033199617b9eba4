"""The documentation site builds with `mkdocs build --strict` (no broken link, reference or
docstring cross-reference) in English and Chinese (mkdocs-static-i18n), and works from any
sub-path: every page exists in both languages, the language switch leads from a page to its
twin by a relative link, the theme speaks the page's language, and search covers both."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SWITCH = re.compile(r'<a href="([^"]*)" hreflang="(en|zh)" class="md-select__link"')


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    pytest.importorskip("mkdocs_static_i18n")
    mkdocs = shutil.which("mkdocs", path=os.path.dirname(sys.executable)) or shutil.which("mkdocs")
    assert mkdocs, "mkdocs is importable but its command is not on PATH"
    site = tmp_path_factory.mktemp("docs") / "site"
    done = subprocess.run([mkdocs, "build", "--strict", "-d", str(site)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    return site


def english_pages() -> list[str]:
    names = [p.name.removesuffix(".md") for p in (ROOT / "docs").glob("*.md")
             if not p.name.endswith(".zh.md")]
    return ["index.html" if n == "index" else f"{n}/index.html" for n in sorted(names)]


def test_every_page_is_built_in_both_languages(site):
    for page in english_pages():
        assert (site / page).exists(), page
        assert (site / "zh" / page).exists(), f"zh/{page}"
    assert (site / "pictures" / "eager-tape.svg").exists()


def test_the_language_switch_leads_to_the_twin_by_a_relative_link(site):
    for page in english_pages():
        for lang, path in (("en", site / page), ("zh", site / "zh" / page)):
            html = path.read_text(encoding="utf-8")
            assert f'<html lang="{lang}"' in html, path
            links = dict((hreflang, href) for href, hreflang in SWITCH.findall(html))
            assert set(links) == {"en", "zh"}, path
            for hreflang, href in links.items():
                assert not href.startswith(("/", "http")), (path, href)  # works under a sub-path
                target = (path.parent / href).resolve() / "index.html"
                twin = site / page if hreflang == "en" else site / "zh" / page
                assert target == twin.resolve(), (path, hreflang, href)


def test_no_page_links_to_the_site_root_absolutely(site):
    """An absolute `/...` link breaks when the site is served under a sub-path (404.html is
    served at any address, so it is the one page whose links cannot be relative)."""
    for path in site.rglob("*.html"):
        if path.name != "404.html":
            html = path.read_text(encoding="utf-8")
            assert not re.search(r'(href|src)="/(?!/)', html), path


def test_the_theme_and_search_speak_both_languages(site):
    chinese = (site / "zh" / "jit" / "index.html").read_text(encoding="utf-8")
    assert "搜索" in chinese  # Material's own labels, in Chinese
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert index["config"]["lang"] == ["en", "zh"]
    locations = [doc["location"] for doc in index["docs"]]
    assert any(loc.startswith("zh/jit/") for loc in locations)
    assert any(loc.startswith("jit/") for loc in locations)
    # Chinese has no spaces: jieba (the docs extra) splits it into words, which Material's
    # search marks with zero-width spaces, so a word in the middle of a sentence is found
    chinese_text = " ".join(doc["text"] for doc in index["docs"]
                            if doc["location"].startswith("zh/jit/"))
    assert "\u200b" in chinese_text
