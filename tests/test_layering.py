"""The package is layered (docs/architecture.md): counting the imports written inside functions,
no module imports a higher floor and no imports form a cycle; the few imports that wait for a
call are of optional packages, each listed with its reason; every module imports first."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parent.parent / "tools" / "layers.py"
spec = importlib.util.spec_from_file_location("dongjing_layers", TOOL)
layers = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = layers  # (its dataclass looks its module up)
spec.loader.exec_module(layers)

ARROWS = layers.imports()


def _where(arrow) -> str:
    return f"{arrow.source}:{arrow.line} -> {arrow.target}"


def test_the_scan_counts_imports_inside_functions_and_skips_type_checking():
    tree = ast.parse(
        "import a\n"
        "if TYPE_CHECKING:\n    import b\nelse:\n    import c\n"
        "def f():\n    import d\n    class K:\n        import e\n"
        "class C:\n    import g\n    def m(self):\n        import h\n"
    )
    found = {n.names[0].name: deferred for n, deferred in layers._statements(tree)}
    assert found == {"a": False, "c": False, "d": True, "e": True, "g": False, "h": True}


def test_no_import_cycle_counting_function_level_imports():
    groups = layers.cycles(layers.graph(ARROWS))
    assert not groups, "import cycles: " + "; ".join(" <-> ".join(g) for g in groups)


def test_no_import_runs_against_the_layer_order():
    up = layers.upward(ARROWS)
    assert not up, "imports of a higher floor (turn them around: docs/architecture.md):\n" + \
        "\n".join(f"{_where(a)} ({layers.LAYERS[layers.layer_of(a.source)][0]} -> "
                  f"{layers.LAYERS[layers.layer_of(a.target)][0]})" for a in up)


def test_every_module_is_on_a_named_floor():
    top = {"dongjing", "dongjing.__main__"}  # the public surface: the api floor
    loose = [m for m in layers.modules() if m not in top and not any(
        m == p or m.startswith(p + ".") for _, prefixes in layers.LAYERS[:-1] for p in prefixes)]
    assert not loose, f"modules on no floor (add them to tools/layers.py's LAYERS): {loose}"


def test_deferred_imports_are_only_of_optional_packages_listed_with_a_reason():
    deferred = [a for a in ARROWS if a.deferred]
    own = [_where(a) for a in deferred if a.target.split(".")[0] == "dongjing"]
    assert not own, f"deferred imports of dongjing's own modules (a cycle that moved): {own}"
    unlisted = [_where(a) for a in deferred if a.target.split(".")[0] not in
                layers.OPTIONAL_IMPORTS]
    assert not unlisted, f"deferred imports of packages not in OPTIONAL_IMPORTS: {unlisted}"
    statements = {(a.source, a.line) for a in deferred}
    assert len(statements) <= 20, f"{len(statements)} deferred imports (at most 20)"
    used = {a.target.split(".")[0] for a in deferred}
    assert set(layers.OPTIONAL_IMPORTS) <= used, \
        f"listed but never imported late: {sorted(set(layers.OPTIONAL_IMPORTS) - used)}"
    assert all(reason.strip() for reason in layers.OPTIONAL_IMPORTS.values())


def test_few_top_level_modules():
    assert len(layers.top_level_modules()) <= 8, layers.top_level_modules()


def test_every_call_up_is_provided_once_the_package_loads():
    import dongjing  # noqa: F401  (loads every floor)
    from dongjing.core import late, profiler_hooks

    assert late.missing() == []
    assert profiler_hooks.run_instrumented is not None and profiler_hooks.timed_steps is not None
    from dongjing.tensor import Tensor

    for name in ("T", "detach", "clone", "to", "backward", "register_hook", "retain_grad"):
        assert hasattr(Tensor, name), name


def test_the_op_record_is_a_leaf():
    edges = layers.graph(ARROWS)
    assert edges["dongjing.core.registry"] <= {"dongjing.errors", "dongjing.core.late"}


def test_every_module_imports_first_in_a_fresh_process():
    # each import starts from a sys.modules without dongjing, so the order of the names does
    # not change what is checked (a second, reversed walk cost 70-130 s of the suite)
    names = sorted(m for m in layers.modules() if not m.endswith("__main__"))
    script = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    for loaded in [m for m in sys.modules if m.startswith('dongjing')]:\n"
        "        del sys.modules[loaded]\n"
        "    importlib.import_module(name)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={"PYTHONPATH": str(layers.SRC), "PATH": ""}, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_committed_picture_of_the_floors_is_current():
    assert layers.PICTURE.read_text(encoding="utf-8") == layers.svg(), \
        "the import graph changed: run `python tools/layers.py --svg`"
