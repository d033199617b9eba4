"""Write docs/pytorch-coverage.md and docs/pytorch-coverage.zh.md: which names of PyTorch's
public surface dongjing provides, and whether each provided one takes PyTorch's parameter names,
order and defaults. Measured from the installed `torch`; also writes
docs/_build/pytorch_coverage.json, the recorded signatures (PyTorch's and dongjing's).

    python tools/pytorch_coverage.py          # rewrite both pages and the JSON (needs torch)
    python tools/pytorch_coverage.py --check  # exit 1 if any differs from what it would write

The names measured, per namespace:
- `torch.*`, `torch.nn.functional`, `Tensor` methods: the public names (no leading `_`, so
  no dunders) of the namespace whose object is a key of `torch.overrides.get_testing_overrides()`.
PyTorch's signature: `inspect.signature` where the function has one; for builtins the
`name(...)` lines of its docstring (what PyTorch documents; of overloads the longest); else the
stand-in lambda of `get_testing_overrides()` (coarser: Tensor methods share `torch.*`'s).
- `torch.linalg`, `torch.fft`, `torch.special`: every public function in the module.
- `nn` modules: public subclasses of `torch.nn.Module` in `torch.nn`; `optim`: public
  subclasses of `torch.optim.Optimizer` in `torch.optim` (not `Optimizer` itself), with their
  constructors' signatures.

tests/test_pytorch_coverage.py checks the pages against this tool (with torch) and dongjing's
current signatures against the JSON (without torch), so a changed signature fails until the
table is regenerated.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the tool's own modules beside it
from pytorch_coverage_text import TEXT  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PAGES = {"en": ROOT / "docs" / "pytorch-coverage.md",
         "zh": ROOT / "docs" / "pytorch-coverage.zh.md"}
RECORD = ROOT / "docs" / "_build" / "pytorch_coverage.json"

# namespace key -> (title, PyTorch path, dongjing path); dongjing's path may not exist yet
NAMESPACES = {
    "torch": ("`torch.*`", "torch", "dongjing"),
    "functional": ("`torch.nn.functional`", "torch.nn.functional", "dongjing.nn.functional"),
    "tensor": ("`Tensor` methods", "torch.Tensor", "dongjing.Tensor"),
    "linalg": ("`torch.linalg`", "torch.linalg", "dongjing.linalg"),
    "fft": ("`torch.fft`", "torch.fft", "dongjing.fft"),
    "special": ("`torch.special`", "torch.special", "dongjing.special"),
    "nn": ("`torch.nn` modules", "torch.nn", "dongjing.nn"),
    "optim": ("`torch.optim` optimizers", "torch.optim", "dongjing.optim"),
}
CLASS_NAMESPACES = ("nn", "optim")
ZH_TITLES = {"tensor": "`Tensor` 方法", "nn": "`torch.nn` 模块", "optim": "`torch.optim` 优化器"}

Param = tuple[str, Any]  # (rendered name with * or ** for variadics, default or _NO_DEFAULT)
_NO_DEFAULT = inspect.Parameter.empty


def resolve(path: str) -> Any:
    """The object at a dotted path (`dongjing.nn.functional`, `dongjing.Tensor`), or None."""
    import importlib

    parts = path.split(".")
    obj = importlib.import_module(parts[0])
    for part in parts[1:]:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            try:
                obj = importlib.import_module(f"{obj.__name__}.{part}")
            except (ImportError, AttributeError):
                return None
    return obj


def _params(sig: inspect.Signature, drop_first: bool) -> list[Param]:
    out = []
    for p in list(sig.parameters.values())[1 if drop_first else 0:]:
        if p.kind is p.VAR_POSITIONAL:
            out.append(("*" + p.name, _NO_DEFAULT))
        elif p.kind is p.VAR_KEYWORD:
            out.append(("**" + p.name, _NO_DEFAULT))
        else:
            out.append((p.name, p.default))
    return out


def render_params(params: list[Param] | None) -> str | None:
    """`(input, other, out=None)`: names, order and defaults; object addresses removed."""
    if params is None:
        return None
    text = ", ".join(name if default is _NO_DEFAULT else f"{name}={default!r}"
                     for name, default in params)
    return "(" + re.sub(r" at 0x[0-9a-fA-F]+", "", text) + ")"


def dongjing_member(namespace: str, name: str) -> tuple[bool, list[Param] | None]:
    """Whether dongjing provides `name` in `namespace`, and its parameters (None: no signature,
    e.g. a property where PyTorch has a method)."""
    owner = resolve(NAMESPACES[namespace][2])
    if owner is None or name.startswith("_"):
        return False, None
    if namespace == "tensor":
        try:
            static = inspect.getattr_static(owner, name)
        except AttributeError:
            return False, None
        if isinstance(static, property) or not callable(getattr(owner, name)):
            return True, None
        drop_first = not isinstance(static, (staticmethod, classmethod))
        return True, _signature(getattr(owner, name), drop_first)
    obj = getattr(owner, name, None)
    if obj is None or inspect.ismodule(obj) or not callable(obj):
        return False, None
    if namespace in CLASS_NAMESPACES and not isinstance(obj, type):
        return False, None
    return True, _signature(obj, False)


def _signature(obj: Any, drop_first: bool) -> list[Param] | None:
    try:
        return _params(inspect.signature(obj), drop_first)
    except (TypeError, ValueError):
        return None


class _Source(str):
    """A documented default that is not a literal (`torch.preserve_format`): its text."""

    def __repr__(self) -> str:
        return str(self)


def documented_params(obj: Any, name: str) -> list[Param] | None:
    """The parameters of `obj`'s docstring's `name(...)` lines, or None. The first overload,
    widened by each later one that adds parameters around it (`sum(input, *, dtype=None)` and
    `sum(input, dim, keepdim=False, *, dtype=None)` give `(input, dim=None, keepdim=False,
    dtype=None)`: a parameter one overload omits is optional). A keyword-only `out` or
    `Optional[...]` without a documented default defaults to None, as it does."""
    found = []
    lines = (getattr(obj, "__doc__", None) or "").splitlines()
    for i, line in enumerate(lines):
        head = re.match(r"(?:\.\. function:: )?(?:[\w.]+\.)?" + re.escape(name) + r"\(",
                        line.strip())
        if not head:  # `sum(`, `.. function:: sum(`, `linalg.cholesky(`
            continue
        text = line.strip()
        for more in lines[i + 1:i + 4]:  # a signature continued on the next lines
            if ")" in text or not text.endswith(","):
                break
            text += " " + more.strip()
        params = _parse_documented(text[head.end():]) if ")" in text else None
        if params is not None:
            found.append(params)
    if not found:
        return None
    merged = found[0]
    for wider in found[1:]:
        names = [n for n, _ in merged]
        if len(wider) > len(merged) and _is_subsequence(names, [n for n, _ in wider]):
            merged = [(n, None if n not in names and d is _NO_DEFAULT else d) for n, d in wider]
    return merged


def _is_subsequence(short: list[str], long: list[str]) -> bool:
    rest = iter(long)
    return all(name in rest for name in short)


def _parse_documented(text: str) -> list[Param] | None:
    inner = text[:text.index(" -> ")].rstrip() if " -> " in text else text
    inner = inner[:inner.rindex(")")] if ")" in inner else inner
    try:
        args = ast.parse(f"def _({inner}): pass").body[0].args
    except (SyntaxError, AttributeError):
        return None
    positional = args.posonlyargs + args.args
    defaults = [_NO_DEFAULT] * (len(positional) - len(args.defaults)) + [
        _literal(d) for d in args.defaults]
    out: list[Param] = list(zip((a.arg for a in positional), defaults))
    if args.vararg:
        out.append(("*" + args.vararg.arg, _NO_DEFAULT))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        optional = a.arg == "out" or "Optional" in ast.unparse(a.annotation or ast.Constant(0))
        out.append((a.arg, _literal(d) if d is not None else None if optional else _NO_DEFAULT))
    if args.kwarg:
        out.append(("**" + args.kwarg.arg, _NO_DEFAULT))
    return out


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return _Source(ast.unparse(node))


def same_parameters(a: list[Param] | None, b: list[Param] | None) -> bool:
    """Equal names in the same order with equal defaults (0 and 0.0 count as equal)."""
    if a is None or b is None or len(a) != len(b):
        return False
    for (name_a, default_a), (name_b, default_b) in zip(a, b):
        if name_a != name_b:
            return False
        if (default_a is _NO_DEFAULT) != (default_b is _NO_DEFAULT):
            return False
        named = _named_default(default_a), _named_default(default_b)
        if named != (None, None):
            if named[0] != named[1]:
                return False
            continue
        try:
            if type(default_a) is not type(default_b) and not (
                    isinstance(default_a, (int, float)) and isinstance(default_b, (int, float))
                    and not isinstance(default_a, bool) and not isinstance(default_b, bool)):
                return False
            if not bool(default_a == default_b):
                return False
        except Exception:  # noqa: BLE001 - array-like defaults that refuse bool(): compare text
            if repr(default_a) != repr(default_b):
                return False
    return True


def _named_default(default: Any) -> str | None:
    """A default that stands for a named object of its library, by that name: a documented
    `torch.preserve_format` and dongjing's `dongjing.preserve_format` (its repr) are
    `preserve_format`; a function default (`activation=F.relu`) is its function's name. None
    for other defaults, which compare by value."""
    if isinstance(default, _Source):
        text = str(default)
    elif inspect.isfunction(default) or inspect.isbuiltin(default):
        return "function " + default.__name__
    else:
        text = repr(default) if type(default).__module__.startswith(("torch", "dongjing")) \
            else ""
    match = re.fullmatch(r"(?:torch|dongjing)\.(\w+)", text)
    return match.group(1) if match else None


@dataclass
class Entry:
    name: str
    pytorch: str | None
    dongjing: str | None = None
    provided: bool = False
    same: bool = False
    accepts: str | None = None  # what PyTorch accepts, checked by calling, where the record errs


@dataclass
class Coverage:
    torch_version: str
    entries: dict[str, list[Entry]] = field(default_factory=dict)


def _pytorch_signature(obj: Any, name: str, stand_in: Any, method: bool) -> list[Param] | None:
    """The signature PyTorch gives `obj`, its documented one, or its stand-in lambda's."""
    own = _signature(obj, method)
    if own is not None:
        return own
    documented = documented_params(obj, name)
    if documented is not None:
        return documented
    return None if stand_in is None else _signature(stand_in, method)


def _pytorch_names(torch: Any) -> dict[str, dict[str, list[Param] | None]]:
    overrides = torch.overrides.get_testing_overrides()

    def lambda_of(obj: Any) -> Any:
        try:
            return overrides.get(obj)
        except TypeError:  # unhashable
            return None

    found: dict[str, dict[str, list[Param] | None]] = {}
    for key in ("torch", "functional", "tensor"):
        owner = resolve(NAMESPACES[key][1])
        names = {}
        for name in dir(owner):
            if name.startswith("_"):
                continue
            obj = getattr(owner, name, None)
            stand_in = lambda_of(obj)
            if stand_in is not None:
                names[name] = _pytorch_signature(obj, name, stand_in, key == "tensor")
        found[key] = names
    for key in ("linalg", "fft", "special"):
        owner = resolve(NAMESPACES[key][1])
        names = {}
        for name in dir(owner):
            obj = getattr(owner, name)
            if name.startswith("_") or inspect.ismodule(obj) or isinstance(obj, type) \
                    or not callable(obj):
                continue
            names[name] = _pytorch_signature(obj, name, lambda_of(obj), False)
        found[key] = names
    for key, base in (("nn", torch.nn.Module), ("optim", torch.optim.Optimizer)):
        owner = resolve(NAMESPACES[key][1])
        found[key] = {name: _signature(obj, False) for name in dir(owner)
                      if not name.startswith("_")
                      and isinstance(obj := getattr(owner, name), type) and issubclass(obj, base)
                      and obj is not torch.optim.Optimizer}
    return found


def accepted_params(torch: Any, key: str, name: str) -> list[Param] | None:
    """Where PyTorch's record is not what PyTorch accepts (tools/pytorch_accepts_table.py):
    the parameters it accepts, proved by calling it; else None."""
    from pytorch_accepts import NotAccepted, verify
    from pytorch_accepts_table import ACCEPTS

    accepts = ACCEPTS.get(key, {}).get(name)
    if accepts is None:
        return None
    params = _parse_documented(accepts.signature[1:])
    if params is None:
        raise SystemExit(f"{key}.{name}: cannot read {accepts.signature}")
    try:
        verify(torch, key, name, accepts, params)
    except NotAccepted as e:
        raise SystemExit(f"PyTorch does not accept what tools/pytorch_accepts_table.py "
                         f"states: {e}") from e
    return params


def measure() -> Coverage:
    import warnings

    import torch

    import dongjing  # noqa: F401 - the namespaces resolve from it

    cov = Coverage(torch.__version__.split("+")[0])
    for key, names in _pytorch_names(torch).items():
        rows = []
        for name in sorted(names, key=str.lower):
            theirs = names[name]
            provided, ours = dongjing_member(key, name)
            with warnings.catch_warnings():  # PyTorch's deprecation notes on the sample calls
                warnings.simplefilter("ignore")
                accepted = accepted_params(torch, key, name)
            rows.append(Entry(name, render_params(theirs),
                              render_params(ours) if provided else None, provided,
                              provided and same_parameters(
                                  theirs if accepted is None else accepted, ours),
                              render_params(accepted)))
        cov.entries[key] = rows
    return cov


def record_text(cov: Coverage) -> str:
    """The JSON record: every PyTorch name per namespace, with both signatures; a name a line."""
    lines = ["{", f' "torch_version": {json.dumps(cov.torch_version)},', ' "namespaces": {']
    for i, (key, rows) in enumerate(cov.entries.items()):
        lines.append(f"  {json.dumps(key)}: {{")
        for j, e in enumerate(rows):
            row = {"provided": e.provided, "same": e.same, "pytorch": e.pytorch,
                   "dongjing": e.dongjing}
            if e.accepts is not None:
                row["accepts"] = e.accepts
            comma = "," if j < len(rows) - 1 else ""
            lines.append(f"   {json.dumps(e.name)}: {json.dumps(row, ensure_ascii=False)}{comma}")
        lines.append("  }" + ("," if i < len(cov.entries) - 1 else ""))
    return "\n".join(lines + [" }", "}"]) + "\n"


def _names(entries: list[Entry], none: str) -> str:
    return ", ".join(f"`{e.name}`" for e in entries) or none


def _cell(sig: str | None, no_sig: str) -> str:
    return no_sig if sig is None else "`" + sig.replace("|", "\\|") + "`"


def _title(key: str, lang: str) -> str:
    return ZH_TITLES.get(key, NAMESPACES[key][0]) if lang == "zh" else NAMESPACES[key][0]


def render(cov: Coverage, lang: str) -> str:
    t = TEXT[lang]
    lines = [t["title"], "", t["intro"].format(version=cov.torch_version), "",
             t["summary"], "", t["head"], "|---|---:|---:|---:|---:|---:|"]
    for key, rows in cov.entries.items():
        provided = sum(e.provided for e in rows)
        same = sum(e.same for e in rows)
        lines.append(f"| {_title(key, lang)} | {len(rows)} | {provided} "
                     f"| {provided / max(len(rows), 1):.0%} | {same} "
                     f"| {same / max(provided, 1):.0%} |")
    for key, rows in cov.entries.items():
        same = [e for e in rows if e.same]
        differ = [e for e in rows if e.provided and not e.same]
        missing = [e for e in rows if not e.provided]
        lines += ["", f"## {_title(key, lang)}", "",
                  t["same"].format(n=len(same)), "", _names(same, t["none"]), "",
                  t["differ"].format(n=len(differ)), ""]
        if differ:
            lines += [t["differ_head"], "|---|---|---|"]
            lines += [f"| `{e.name}` | {_cell(e.accepts or e.pytorch, t['no_sig'])} "
                      f"| {_cell(e.dongjing, t['no_sig'])} |" for e in differ]
        else:
            lines.append(t["none"])
        checked = [e for e in rows if e.accepts is not None]
        if checked:
            lines += ["", t["accepts"].format(n=len(checked)), "", t["accepts_head"],
                      "|---|---|---|---|"]
            lines += [f"| `{e.name}` | {_cell(e.pytorch, t['no_sig'])} "
                      f"| {_cell(e.accepts, t['no_sig'])} "
                      f"| {_cell(e.dongjing, t['no_sig'])} |" for e in checked]
        lines += ["", t["missing"].format(n=len(missing)), "", _names(missing, t["none"])]
    return "\n".join(lines) + "\n"


def outputs(cov: Coverage) -> dict[Path, str]:
    """Every file the tool writes, with its text."""
    files = {path: render(cov, lang) for lang, path in PAGES.items()}
    files[RECORD] = record_text(cov)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare the files with what would be written; change nothing")
    args = parser.parse_args(argv)
    stale = []
    for path, text in outputs(measure()).items():
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("out of date (run python tools/pytorch_coverage.py): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
