"""Every ```python block of every page in docs/ runs, and prints what the page shows.

The rules a page follows (docs/contributing.md explains them to writers):

* a block runs in a fresh namespace, unless the line before it is `<!-- continue -->`: then it
  runs in the namespace of the block before it on the same page;
* a ```text block right after a python block (only blank lines between), or one after an
  `<!-- output -->` line, is what the python block prints; `...` in it matches any text;
* `<!-- no-run: why -->` before a block leaves it out (for example a block that needs
  `mpiexec`); the reason is required;
* `<!-- requires: onnx, onnxruntime -->` before a block skips its chain, saying so, when one
  of those (optional) packages is not installed;
* `<!-- slow -->` before a block marks its chain slow (a training run of minutes): it runs only
  with `DONGJING_DOCS_SLOW=1` in the environment, and is skipped, saying so, otherwise.

Markers may be stacked on consecutive lines (`<!-- slow -->` then `<!-- continue -->`).

Each block is written to a real file before it runs, so `dj.jit` and tracebacks can read its
source. Pages listed in OWN_TESTS have their own test file and are not collected here. A
Chinese twin (X.zh.md) is not run a second time: tests/test_docs_twins.py checks that its
blocks and markers are exactly its English page's, which run here.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
# pages whose blocks run in their own test (special set-up: a TF1 default graph to reset,
# optional packages, the repository root as working directory; output checked there)
OWN_TESTS = {
    "coming-from-tensorflow.md": "tests/test_compat_v1_docs.py",
    "profiling.md": "tests/test_profiler_docs.py",
    "onnx.md": "tests/test_onnx_docs.py",
    "debugging.md": "tests/test_anomaly_docs.py",
}
FENCE = re.compile(r"^( *)```(\w*)\s*$")
TAB = re.compile(r'^=== +"(.+)"\s*$')  # a content tab (pymdownx.tabbed): its blocks are indented
MARKER = re.compile(r"^<!--\s*(continue|output|slow|no-run:.+?|requires:.+?)\s*-->\s*$")
RUN_SLOW = os.environ.get("DONGJING_DOCS_SLOW") == "1"


@dataclass
class Block:
    """One python block of a page, with the output the page shows for it (if any)."""

    page: str
    line: int
    source: str
    continues: bool = False
    skip: str = ""
    slow: bool = False
    requires: tuple[str, ...] = ()
    expected: str | None = None
    chain: list[Block] = field(default_factory=list)
    tabs: tuple[int, str] | None = None  # (group number on the page, tab title) inside tabs


def parse(text: str, page: str) -> list[Block]:
    """The python blocks of a page, in order, with their markers and expected output."""
    lines = text.splitlines()
    blocks: list[Block] = []
    markers: list[str] = []
    since_python, i = None, 0
    tab, group, in_group = None, 0, False
    while i < len(lines):
        m = MARKER.match(lines[i].strip())
        fence = FENCE.match(lines[i])
        tab_title = TAB.match(lines[i])
        if tab_title:  # a tab opens (a new group unless it follows the previous tab's blocks)
            group += 0 if in_group else 1
            tab, in_group = (group, tab_title.group(1)), True
            markers, since_python = [], None
            i += 1
            continue
        if lines[i].strip() and not lines[i].startswith(" "):
            tab, in_group = None, False  # anything back at the margin closes the tab group
        if m:
            markers.append(m.group(1))
        elif fence and fence.group(2):
            indent, lang, start = fence.group(1), fence.group(2), i
            i += 1
            body = []
            while i < len(lines) and not lines[i].startswith(indent + "```"):
                line = lines[i]
                body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
                i += 1
            source = "\n".join(body) + "\n"
            if lang == "python":
                skip = [k[len("no-run:"):].strip() for k in markers if k.startswith("no-run:")]
                needs = [m.strip() for k in markers if k.startswith("requires:")
                         for m in k[len("requires:"):].split(",")]
                blocks.append(Block(page, start + 1, source, continues="continue" in markers,
                                    skip=skip[0] if skip else "", slow="slow" in markers,
                                    requires=tuple(needs), tabs=tab if indent else None))
                since_python = 0
            elif lang == "text" and blocks and (since_python == 0 or "output" in markers):
                blocks[-1].expected = source
                since_python = None
            else:
                since_python = None
            markers = []
        elif lines[i].strip():
            markers, since_python = [], None
        i += 1
    return blocks


def pages() -> list[Path]:
    return [p for p in sorted(DOCS.glob("*.md"))
            if not p.name.endswith(".zh.md") and p.name not in OWN_TESTS]


def chains() -> list[list[Block]]:
    """Blocks grouped so that a chain starts fresh and the rest continue it."""
    out: list[list[Block]] = []
    for path in pages():
        for block in parse(path.read_text(encoding="utf-8"), str(path.relative_to(DOCS))):
            if block.continues and out and out[-1][0].page == block.page:
                out[-1].append(block)
            else:
                out.append([block])
    return [c for c in out if any(not b.skip for b in c)]


def matches(expected: str, got: str) -> bool:
    """Line-by-line comparison, trailing spaces ignored; `...` matches any text."""
    pattern = "\n".join(re.escape(line.rstrip()).replace(r"\.\.\.", ".*?")
                        for line in expected.strip().splitlines())
    got = "\n".join(line.rstrip() for line in got.strip().splitlines())
    return re.fullmatch(pattern, got, flags=re.S) is not None


CHAINS = chains()


@pytest.fixture
def restored_extensions():
    """Ops, compiler passes and backends a page declares (docs/extending.md) leave with its
    chain, so the op-table tests that run later see only the package's own."""
    from dongjing.backends import base as backends
    from dongjing.compiler import pipeline
    from dongjing.core.registry import OPS
    from dongjing.tensor import Tensor

    ops, passes = dict(OPS), list(pipeline._EXTRA_PASSES)
    known, by_type = list(backends._BACKENDS), dict(backends._BY_TYPE)
    methods = set(vars(Tensor))
    yield
    for name in set(vars(Tensor)) - methods:  # Tensor methods the page's ops declared
        delattr(Tensor, name)
    OPS.clear()
    OPS.update(ops)
    pipeline._EXTRA_PASSES[:] = passes
    backends._BACKENDS[:] = known
    backends._BY_TYPE.clear()
    backends._BY_TYPE.update(by_type)


@pytest.mark.parametrize("chain", CHAINS, ids=[f"{c[0].page}:{c[0].line}" for c in CHAINS])
@pytest.mark.usefixtures("restored_extensions")
def test_block_runs_and_prints_what_the_page_shows(chain, tmp_path, monkeypatch):
    if any(b.slow for b in chain) and not RUN_SLOW:
        pytest.skip(f"{chain[0].page}: a slow page (minutes); DONGJING_DOCS_SLOW=1 runs it")
    for block in chain:
        for module in block.requires:
            pytest.importorskip(module)
    monkeypatch.chdir(tmp_path)  # blocks may write files
    namespace: dict = {"__name__": "__docs__"}
    for block in chain:
        if block.skip:
            continue
        name = f"{Path(block.page).stem.replace('-', '_')}_line{block.line}.py"
        script = tmp_path / name
        script.write_text(block.source, encoding="utf-8")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block.source, os.fspath(script), "exec"), namespace)
        if block.expected is not None:
            assert matches(block.expected, out.getvalue()), (
                f"{block.page} line {block.line} printed:\n{out.getvalue()}\n"
                f"the page shows:\n{block.expected}")


def test_the_parser_understands_the_markers():
    page = "\n".join([
        "```python", "print(1)", "```", "", "```text", "1", "```",
        "<!-- continue -->", "```python", "x = 2", "```", "prose",
        "```text", "not output", "```",
        "<!-- slow -->", "<!-- requires: onnx, onnxruntime -->",
        "<!-- no-run: needs mpiexec -->", "```python", "import mpi", "```",
        "<!-- output -->", "```text", "shown", "```",
    ])
    a, b, c = parse(page, "p.md")
    assert (a.expected, b.continues, b.expected) == ("1\n", True, None)
    assert (c.skip, c.slow, c.expected) == ("needs mpiexec", True, "shown\n")
    assert c.requires == ("onnx", "onnxruntime")
    assert matches("<Mul object at ...> False", "<Mul object at 0x7f> False")
    assert not matches("[20, 20, 40]", "[array(20), array(20), array(40)]")


def test_the_parser_reads_blocks_inside_content_tabs():
    page = "\n".join([
        "=== \"Eager\"", "", "    ```python", "    print(1)", "    ```", "",
        "    ```text", "    1", "    ```", "", "=== \"Graph\"", "",
        "    <!-- no-run: shown only -->", "    ```python", "    if True:",
        "        print(1)", "    ```", "", "text at the margin", "",
        "```python", "print(2)", "```",
    ])
    eager, graph, after = parse(page, "p.md")
    assert eager.tabs == (1, "Eager") and eager.expected == "1\n"
    assert graph.tabs == (1, "Graph") and graph.source == "if True:\n    print(1)\n"
    assert graph.skip == "shown only" and after.tabs is None


def test_tabs_of_one_group_print_the_same():
    """A computation shown eagerly, as a graph and under dj.jit in tabs prints the same numbers
    in each (each block is also checked against its own output above)."""
    groups: dict = {}
    for path in pages():
        name = str(path.relative_to(DOCS))
        for block in parse(path.read_text(encoding="utf-8"), name):
            if block.tabs is not None and block.expected is not None:
                groups.setdefault((name, block.tabs[0]), {})[block.tabs[1]] = block.expected
    assert groups, "no page shows a computation in tabs"
    for (name, number), outputs in groups.items():
        assert len(set(outputs.values())) == 1, (name, number, outputs)


def test_every_page_is_collected():
    collected = {c[0].page for c in CHAINS}
    for path in pages():
        name = str(path.relative_to(DOCS))
        if any(not b.skip for b in parse(path.read_text(encoding="utf-8"), name)):
            assert name in collected
