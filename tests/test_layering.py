"""The package is layered: module-level imports form no cycle, and every module imports first."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

SRC = pathlib.Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "dongjing"


def _modules() -> dict[str, tuple[pathlib.Path, bool]]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts.pop()
        mods[".".join(parts)] = (path, is_pkg)
    return mods


def _targets(mods, module: str, is_pkg: bool, node: ast.ImportFrom) -> list[str]:
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    if node.level > 1:
        base = base[: len(base) - node.level + 1]
    target = ".".join(base) + (f".{node.module}" if node.module else "") if node.level \
        else node.module
    subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in mods]
    whole = [target] if target in mods and len(subs) < len(node.names) else []
    return subs + whole


def _import_graph() -> dict[str, set[str]]:
    """module -> modules it imports at module level (ancestors excluded: always loaded first)."""
    mods = _modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for module, (path, is_pkg) in mods.items():
        for stmt in ast.parse(path.read_text()).body:
            if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.dump(stmt.test):
                continue
            nodes = [n for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))] \
                if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Try)) else []
            for node in nodes:
                found = _targets(mods, module, is_pkg, node) if isinstance(node, ast.ImportFrom) \
                    else [a.name for a in node.names if a.name in mods]
                for target in found:
                    parts = target.split(".")
                    for i in range(2, len(parts) + 1):  # a.b.c loads a.b first
                        step = ".".join(parts[:i])
                        if step in mods and step != module and not module.startswith(step + "."):
                            edges[module].add(step)
    return edges


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    for start in edges:
        if state.get(start):
            continue
        stack = [(start, iter(sorted(edges[start])))]
        path = [start]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                stack.append((nxt, iter(sorted(edges[nxt]))))
                path.append(nxt)
    return None


def test_module_imports_form_no_cycle():
    cycle = _cycle(_import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_registry_is_a_leaf():
    edges = _import_graph()
    assert edges["dongjing.core.registry"] <= {"dongjing.errors", "dongjing.core.late"}


@pytest.mark.parametrize("order", ["forward", "reverse"])
def test_every_module_imports_first_in_a_fresh_process(order):
    names = sorted(m for m in _modules() if not m.endswith("__main__"))
    if order == "reverse":
        names.reverse()
    script = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    for loaded in [m for m in sys.modules if m.startswith('dongjing')]:\n"
        "        del sys.modules[loaded]\n"
        "    importlib.import_module(name)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={"PYTHONPATH": str(SRC), "PATH": ""}, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
