"""Type-check what users read: `python tools/type_check.py [--all]`.

The code users read and copy is `examples/` and the python blocks of the docs pages. This tool
finds every dongjing name that code uses (the attribute chains rooted at a dongjing import, and
every Tensor method called by name), asks a type checker (basedpyright, in the `dev` extra) for
the type of each, and reports the names whose type is partly unknown: such a name hands `Any` to
the user's code, which then goes unchecked. It also type-checks the files themselves
(basedpyright's standard mode) and reports the errors. `--all` measures the whole public API
instead (every name of the public namespaces, and each public class's methods).

Exit status 1 when something is reported; `tests/test_typing.py` runs it.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
NAMESPACES = ["dongjing", "dongjing.nn", "dongjing.nn.functional", "dongjing.nn.init",
              "dongjing.optim", "dongjing.optim.lr_scheduler", "dongjing.linalg", "dongjing.fft",
              "dongjing.distributions", "dongjing.data", "dongjing.func", "dongjing.autograd",
              "dongjing.amp", "dongjing.profiler", "dongjing.onnx", "dongjing.distributed",
              "dongjing.compat.v1"]
_METHOD_KINDS = (types.FunctionType, property, staticmethod, classmethod)


def checker() -> list[str] | None:
    """The basedpyright command, or None where it is not installed."""
    found = shutil.which("basedpyright") or shutil.which(
        "basedpyright", path=str(Path(sys.executable).parent))
    return [found] if found else None


def user_files(tmp: Path) -> list[Path]:
    """examples/*.py, and each chain of docs blocks written to its own file under `tmp`."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import test_docs_blocks as blocks
    finally:
        sys.path.pop(0)
    files = sorted((ROOT / "examples").glob("*.py"))
    for chain in blocks.CHAINS:
        if any(b.skip for b in chain):
            continue
        first = chain[0]
        stem = re.sub(r"\W", "_", f"{first.page}_{first.line}")
        path = tmp / f"docs_{stem}.py"
        path.write_text("\n".join(b.source for b in chain))
        files.append(path)
    return files


@dataclass(frozen=True)
class Use:
    """A dongjing name used by a file: `dongjing.nn.Linear` (where: file and line)."""

    name: str
    where: str


def _resolve(dotted: str):
    """The object `dotted` names (module, then attributes), or None."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
            if obj is None:
                return None
        return obj
    return None


def _chain(node: ast.AST) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"] (None for anything but names and attributes)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def uses(path: Path) -> set[Use]:
    """The dongjing names `path` uses: attribute chains from its dongjing imports, and Tensor
    methods called by name."""
    import dongjing

    try:
        tree = ast.parse(path.read_text())
    except SyntaxError:
        return set()
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "dongjing":
                    aliases[a.asname or "dongjing"] = a.name if a.asname else "dongjing"
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] == "dongjing":
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    found: set[Use] = set()
    tensor_names = set(dir(dongjing.Tensor))
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, (ast.Attribute, ast.Name)):
            parts = _chain(node)
            if parts and parts[0] in aliases:
                dotted = ".".join([aliases[parts[0]], *parts[1:]])
                obj = _resolve(dotted)
                if obj is not None and not isinstance(obj, types.ModuleType):
                    found.add(Use(dotted, where))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in tensor_names and not node.func.attr.startswith("_"):
            found.add(Use(f"dongjing.Tensor.{node.func.attr}", where))
    return found


def public_api() -> set[Use]:
    """Every name of the public namespaces, with each public class's methods."""
    found: set[Use] = set()
    for ns in NAMESPACES:
        module = importlib.import_module(ns)
        names = getattr(module, "__all__", None) or [n for n in vars(module)
                                                     if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name, None)
            if obj is None or isinstance(obj, types.ModuleType):
                continue
            found.add(Use(f"{ns}.{name}", ns))
    return found


def _with_methods(names: set[str]) -> set[str]:
    """`names`, and for each class among them its constructor and public methods."""
    out = set(names)
    for name in names:
        obj = _resolve(name)
        if isinstance(obj, type) and obj.__module__.startswith("dongjing"):
            for klass in obj.__mro__:
                if not klass.__module__.startswith("dongjing"):
                    continue
                for attr, value in vars(klass).items():
                    if isinstance(value, _METHOD_KINDS) and (
                            not attr.startswith("_") or attr in ("__init__", "__call__")):
                        out.add(f"{name}.{attr}")
    return out


def _run_checker(cmd: list[str], files: list[Path], tmp: Path, mode: str) -> list[dict]:
    # Optional-access and possibly-unbound reports are about the reader's own code (`.grad` is
    # Optional in PyTorch's stubs too), not about what dongjing declares
    config = {"extraPaths": [str(SRC)], "pythonVersion": "3.11", "typeCheckingMode": mode,
              "reportMissingModuleSource": "none", "reportOptionalMemberAccess": "none",
              "reportOptionalSubscript": "none", "reportOptionalCall": "none",
              "reportOptionalIterable": "none", "reportOptionalOperand": "none",
              "reportPossiblyUnbound": "none", "reportPossiblyUnboundVariable": "none"}
    cfg = tmp / f"pyright-{mode}.json"
    cfg.write_text(json.dumps(config))
    run = subprocess.run([*cmd, "-p", str(cfg), "--pythonpath", sys.executable, "--outputjson",
                          *map(str, files)], capture_output=True, text=True, cwd=tmp,
                         env={**os.environ, "NODE_OPTIONS": "--max-old-space-size=2048"})
    try:
        return json.loads(run.stdout)["generalDiagnostics"]
    except (ValueError, KeyError):
        raise RuntimeError(f"basedpyright failed:\n{run.stdout[-2000:]}\n"
                           f"{run.stderr[-2000:]}") from None


def unknown_types(cmd: list[str], names: set[str], tmp: Path) -> dict[str, str]:
    """name -> its type as the checker sees it, for each name whose type is partly unknown."""
    ordered = sorted(names)
    # import a module by its own path only: `dongjing.cuda` is `dongjing.devices.cuda`
    # published as an attribute, and `import dongjing.cuda` would not resolve
    modules = sorted({n.split(".")[0] for n in ordered} | {
        prefix for n in ordered for i in range(2, len(n.split(".")))
        if isinstance(found := _resolve(prefix := ".".join(n.split(".")[:i])), types.ModuleType)
        and found.__name__ == prefix})
    lines = ["from typing import reveal_type"] + [f"import {m}" for m in modules]
    first = len(lines)
    lines += [f"reveal_type({n})" for n in ordered]
    probe = tmp / "probe_api.py"
    probe.write_text("\n".join(lines) + "\n")
    bad = {}
    for d in _run_checker(cmd, [probe], tmp, "standard"):
        line = d["range"]["start"]["line"] - first
        if d["severity"] == "information" and 0 <= line < len(ordered) and "Unknown" in d[
                "message"]:
            bad[ordered[line]] = d["message"].split(" is ", 1)[-1]
        elif d["severity"] == "error" and 0 <= line < len(ordered):
            bad[ordered[line]] = d["message"]
    return bad


def _dongjing_names() -> tuple[set[str], dict[str, set[str]]]:
    """The public function names of dongjing, and each dongjing class's attributes."""
    import dongjing

    functions: set[str] = set()
    classes: dict[str, set[str]] = {"Tensor": set(dir(dongjing.Tensor))}
    for ns in NAMESPACES:
        module = importlib.import_module(ns)
        for name in dir(module):
            obj = getattr(module, name, None)
            if isinstance(obj, type) and getattr(obj, "__module__", "").startswith("dongjing"):
                classes.setdefault(obj.__name__, set()).update(dir(obj))
                functions.update(n for n in vars(obj) if not n.startswith("_"))
            elif callable(obj):
                functions.add(name)
    return functions, classes


_IN_FUNCTION = re.compile(r'in function "(\w+)"')
_ARGUMENT = re.compile(r'Argument of type "(.*?)" cannot be assigned')
_WORD = re.compile(r"[A-Za-z_]\w*")


def _names_dongjing(type_text: str, classes: dict[str, set[str]]) -> bool:
    """Whether a type as the checker prints it involves dongjing's classes (or Unknown)."""
    words = set(_WORD.findall(type_text))
    return bool(words & (set(classes) | {"TensorLike"}))


_OPTIONAL_OPERAND = re.compile(r'not supported for types "[^"]*" and "None"'
                               r'|not supported for types "None" and ')
_ATTRIBUTE = re.compile(r'(?:access|assign to) attribute "(\w+)" for class "(\w+)"')


def about_dongjing(message: str, rule: str, functions: set[str],
                   classes: dict[str, set[str]]) -> bool:
    """Whether an error is about what dongjing declares: a call of a dongjing function, or
    an attribute a dongjing class has at run time but not for the checker. Errors about the
    reader's own code or another library's types are theirs."""
    if rule == "reportAttributeAccessIssue":
        found = _ATTRIBUTE.search(message)
        if found is None:
            return "dongjing" in message
        attr, klass = found.groups()
        return attr in classes.get(klass, ())
    if rule in ("reportCallIssue", "reportArgumentType"):
        found = _IN_FUNCTION.search(message)
        given = _ARGUMENT.search(message)
        if given is not None and (given.group(1).endswith("| None")
                                  or not _names_dongjing(given.group(1), classes)):
            return False  # the reader's Optional, or another library's value
        return found is None or found.group(1) in functions
    if "Unbound" in message:
        return False  # the reader's variable, possibly unset on some path
    if rule == "reportOperatorIssue" and _OPTIONAL_OPERAND.search(message):
        return False  # `0.1 * g` with g Optional (`dj.gradients` gives None for an unused x):
        # the reader's Optional, as reportOptionalOperand (off) is when it stands on the left
    return rule in ("reportIncompatibleMethodOverride", "reportIndexIssue",
                    "reportOperatorIssue", "reportRedeclaration")


def file_errors(cmd: list[str], files: list[Path], tmp: Path) -> list[str]:
    """Errors basedpyright's standard mode finds in `files` about dongjing's declarations."""
    functions, classes = _dongjing_names()
    return [f"{Path(d['file']).name}:{d['range']['start']['line'] + 1}: {d['message']}"
            for d in _run_checker(cmd, files, tmp, "standard") if d["severity"] == "error"
            and about_dongjing(d["message"], d.get("rule", ""), functions, classes)]


def main(argv: list[str]) -> int:
    cmd = checker()
    if cmd is None:
        print("basedpyright is not installed (pip install -e '.[dev]')", file=sys.stderr)
        return 2
    sys.path.insert(0, str(SRC))
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        if "--all" in argv:
            names = _with_methods({u.name for u in public_api()})
            bad = unknown_types(cmd, names, tmp)
            print(f"public API: {len(names)} names, {len(names) - len(bad)} fully typed "
                  f"({100 * (len(names) - len(bad)) / len(names):.0f}%)")
            for n in sorted(bad):
                print(f"  {n}: {bad[n]}")
            return 1 if bad else 0
        files = user_files(tmp)
        used: set[Use] = set()
        for f in files:
            used |= uses(f)
        names = _with_methods({u.name for u in used})
        bad = unknown_types(cmd, names, tmp)
        errors = file_errors(cmd, files, tmp)
        print(f"{len(files)} files (examples and docs blocks) use {len(names)} dongjing names; "
              f"{len(bad)} partly unknown; {len(errors)} type errors in the files")
        for n in sorted(bad):
            print(f"  unknown: {n}: {bad[n]}")
        for e in errors:
            print(f"  error: {e}")
        return 1 if bad or errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
