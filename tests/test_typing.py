"""Type checkers see dongjing's generated API: the stubs are current and complete.

`tools/type_stubs.py` writes the signatures of what dongjing makes at import time (the op
bindings `dj.relu`, `dj.add`, ... and the Tensor methods attached to the class); without them a
checker reports `dj.relu` as unknown. `tools/type_check.py` asks basedpyright (in the `dev`
extra) for the types a user's code sees: every dongjing name that `examples/` and the docs'
python blocks use is fully typed (none hands `Any` to the reader's code), and the checker finds
no error in those files about what dongjing declares.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


stubs = _tool("type_stubs")


def test_the_committed_stubs_are_what_the_tool_writes():
    # a fresh process: ops defined by other test modules would attach methods of their own
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "type_stubs.py"), "--check"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr[-3000:]


def test_every_published_op_name_is_in_the_stub():
    import dongjing as dj

    stub = ast.parse(stubs.OPS_STUB.read_text())
    declared = {n.name for n in stub.body if isinstance(n, ast.FunctionDef)}
    declared |= {a.asname or a.name for n in stub.body if isinstance(n, ast.ImportFrom)
                 for a in n.names}
    missing = sorted(n for n in dj.ops.__all__ if n not in declared)
    assert not missing


def test_a_parameter_the_tool_cannot_type_is_reported(monkeypatch):
    def made(x, mystery):  # a generated binding with a parameter name no rule knows
        return x

    problems: list[str] = []
    text = stubs.signature_text(made, "made", problems, returns="Tensor")
    assert problems == ["made: parameter 'mystery' has no annotation and no named type"]
    assert text.startswith("def made(x: TensorLike, mystery: Any)")


def _generated_names() -> list[str]:
    """dongjing names whose signatures the stubs write out (not re-exports, not untyped)."""
    untyped = set(stubs.untyped_names(stubs.OPS_STUB.read_text())
                  + stubs.untyped_names(stubs.METHODS_STUB.read_text()))
    names = []
    for node in ast.parse(stubs.OPS_STUB.read_text()).body:
        if isinstance(node, ast.FunctionDef) and node.name not in untyped:
            names.append(f"dongjing.ops.{node.name}")
    for node in ast.parse(stubs.METHODS_STUB.read_text()).body:
        if isinstance(node, ast.ClassDef):
            names += [f"dongjing.Tensor.{f.name}" for f in node.body
                      if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")
                      and f.name not in untyped]
    return names


# Tensor methods whose source has no annotations yet (written `*args: Any -> Any` in the stub);
# the number may only fall: annotate a method's source and lower it. (1 today: `narrow_copy`,
# made by `ops.torch_copies._copy` as `(*args, **kwargs)`.)
UNTYPED_LIMIT = 1


def test_the_untyped_generated_names_only_get_fewer():
    untyped = (stubs.untyped_names(stubs.OPS_STUB.read_text())
               + stubs.untyped_names(stubs.METHODS_STUB.read_text()))
    assert len(untyped) <= UNTYPED_LIMIT, (
        f"{len(untyped)} untyped names in the stubs (limit {UNTYPED_LIMIT}): annotate the "
        "source of a new function instead")


def test_a_type_checker_sees_every_generated_name_fully_typed(tmp_path):
    check = _tool("type_check")
    cmd = check.checker()
    if cmd is None:
        pytest.skip("basedpyright is not installed (it is in the dev extra)")
    names = _generated_names()
    assert len(names) > 100
    unknown = check.unknown_types(cmd, set(names), tmp_path)
    assert not unknown, "\n".join(f"{k}: {v}" for k, v in sorted(unknown.items()))


def test_a_user_script_gets_tensors_back(tmp_path):
    check = _tool("type_check")
    cmd = check.checker()
    if cmd is None:
        pytest.skip("basedpyright is not installed (it is in the dev extra)")
    script = tmp_path / "user.py"
    script.write_text(
        "import dongjing as dj\n"
        "from typing import reveal_type\n"
        "x = dj.randn(3, 4, requires_grad=True)\n"
        "reveal_type(dj.relu(x) + 1)\n"
        "reveal_type(x.tanh_())\n"
        "reveal_type(dj.matmul(x, x.T).exp())\n"
        "reveal_type(dj.nn.functional.relu(x))\n")
    diags = check._run_checker(cmd, [script], tmp_path, "standard")
    revealed = [d["message"] for d in diags if d["severity"] == "information"]
    assert len(revealed) == 4 and all(m.endswith('is "Tensor"') for m in revealed), revealed
    assert not [d for d in diags if d["severity"] == "error"]


# Errors the checker reports in examples/ and the docs' blocks about dongjing's declarations
USER_FILE_ERRORS_LIMIT = 0


def test_what_examples_and_docs_use_is_fully_typed(tmp_path):
    check = _tool("type_check")
    cmd = check.checker()
    if cmd is None:
        pytest.skip("basedpyright is not installed (it is in the dev extra)")
    files = check.user_files(tmp_path)
    assert len(files) > 20
    used: set = set()
    for f in files:
        used |= check.uses(f)
    names = check._with_methods({u.name for u in used})
    assert len(names) > 1000
    unknown = check.unknown_types(cmd, names, tmp_path)
    assert not unknown, "partly unknown (annotate their source):\n" + "\n".join(
        f"{k}: {v}" for k, v in sorted(unknown.items()))
    errors = check.file_errors(cmd, files, tmp_path)
    assert len(errors) <= USER_FILE_ERRORS_LIMIT, "\n".join(errors)


def test_an_optional_on_the_right_of_an_operator_is_the_readers():
    check = _tool("type_check")
    message = ('Operator "*" not supported for types "float" and "Tensor | None"\n'
               '  Operator "*" not supported for types "float" and "None"')
    assert not check.about_dongjing(message, "reportOperatorIssue", set(), {"Tensor": set()})
    other = 'Operator "@" not supported for types "Tensor" and "str"'
    assert check.about_dongjing(other, "reportOperatorIssue", set(), {"Tensor": set()})


def test_numpy_keyword_aliases_are_in_the_stubs(tmp_path):
    # `dim_aliases` accepts axis= / keepdims= without listing them; the stubs list them
    check = _tool("type_check")
    cmd = check.checker()
    if cmd is None:
        pytest.skip("basedpyright is not installed (it is in the dev extra)")
    script = tmp_path / "aliases.py"
    script.write_text(
        "import dongjing as dj\n"
        "from typing import reveal_type\n"
        "x = dj.randn(3, 4)\n"
        "reveal_type(dj.sum(x, axis=0, keepdims=True))\n"
        "reveal_type(x.max(axis=1).indices)\n"
        "reveal_type(dj.softmax(x, axis=-1))\n"
        "dj.sum(x, axes=0)\n")
    diags = check._run_checker(cmd, [script], tmp_path, "standard")
    revealed = [d["message"] for d in diags if d["severity"] == "information"]
    assert len(revealed) == 3 and all(m.endswith('is "Tensor"') for m in revealed), revealed
    errors = [d for d in diags if d["severity"] == "error"]
    assert [d["range"]["start"]["line"] for d in errors] == [6], errors  # `axes=` only
