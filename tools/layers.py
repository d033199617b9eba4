"""dongjing's import graph, counted with imports written inside functions, and its layer order.

`python tools/layers.py` prints the counts (deferred imports, the modules holding them, the
largest cycle, imports against the layer order, top-level modules); `--arrows` lists each
import against the order and each deferred import; `--svg` rewrites the picture of the floors
(docs/_build/prerendered/layers.svg, drawn here without Graphviz). tests/test_layering.py loads
this file and asserts the counts, and that the committed picture is current.

An import counts wherever it is written (module body, function, class, `try`), except inside an
`if TYPE_CHECKING:` block (never run). `import a.b.c` loads `a.b` first, so it is an arrow to
each; a module's own ancestors are not arrows (Python always loads them first).
"""

from __future__ import annotations

import ast
import html
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PACKAGE = SRC / "dongjing"

# The floors, lowest first. A module belongs to the first entry whose name is the module's or
# one of its packages'. A module may import its own floor or any floor below, never above.
LAYERS: list[tuple[str, list[str]]] = [
    ("core", ["dongjing.errors", "dongjing.dtypes", "dongjing.core", "dongjing.short_paths",
              "dongjing.types"]),
    ("backends", ["dongjing.backends", "dongjing.devices", "dongjing.cpu_kernels",
                  "dongjing.accelerator"]),
    ("tensor", ["dongjing.tensor", "dongjing.tensor.conversion", "dongjing.tensor.dlpack"]),
    ("autograd | graph", ["dongjing.autograd", "dongjing.graph"]),
    ("dispatch", ["dongjing.dispatch", "dongjing.tensor.transfer", "dongjing.autocasting",
                  "dongjing.tensor.out_argument"]),
    ("ops", ["dongjing.ops"]),
    ("tensor api", ["dongjing.tensor.methods", "dongjing.tensor.creation",
                    "dongjing.tensor.factories", "dongjing.tensor.inplace",
                    "dongjing.tensor.inplace_methods", "dongjing.tensor.torch_functions",
                    "dongjing.tensor.torch_methods", "dongjing.tensor.torch_methods_more",
                    "dongjing.tensor.format_methods",
                    "dongjing.linalg", "dongjing.fft", "dongjing.special", "dongjing.amp"]),
    ("models", ["dongjing.distributed", "dongjing.distributions", "dongjing.nn",
                "dongjing.optim", "dongjing.data", "dongjing.io", "dongjing.utils"]),
    ("compiler", ["dongjing.compiler"]),
    ("runtime", ["dongjing.runtime", "dongjing.func"]),
    ("exits", ["dongjing.profiler", "dongjing.onnx", "dongjing.compat", "dongjing.viz"]),
    ("api", ["dongjing"]),
]

# The deferred imports that stay, each of an optional package, with its reason. A deferred
# import of anything else (dongjing's own modules included) fails tests/test_layering.py.
OPTIONAL_IMPORTS: dict[str, str] = {
    "cupy": "the CUDA backend (extra `cuda`): imported when a CUDA device is first asked for",
    "cupyx": "CuPy's scatter-add, with the CUDA backend",
    "cuda": "cuda.pathfinder: where CuPy's wheels keep cuBLAS (the CUDA GEMM path)",
    "numba": "compiled CPU kernels (extra `numba`); NumPy paths run without it",
    "llvmlite": "numba's code generator, for the native kernels built beside numba's",
    "onnx": "ONNX export and import (extra `onnx`), through onnx.errors.require_onnx",
    "google": "protobuf (installed with onnx): the parse error of a malformed model file",
    "onnxruntime": "checking an exported model (extra `onnx`)",
    "mpi4py": "multi-process collectives (extra `dist`)",
    "sklearn": "the digits data set of the examples (extra `examples`)",
    "threadpoolctl": "naming the BLAS in `python -m dongjing`'s report, when installed",
    "tensorboard": "tf.summary's event files and protos (extra `tensorboard`)",
}


@dataclass(frozen=True)
class Import:
    """One import statement's arrow: who imports what, where, and whether it waits for a call."""

    source: str
    target: str
    line: int
    deferred: bool


def modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the package: dotted name -> (file, is a package's `__init__`)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts.pop()
        found[".".join(parts)] = (path, is_pkg)
    return found


def _statements(tree: ast.AST, deferred: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    """Every import statement, with whether it runs later than the module body."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            yield from ((s, d) for child in node.orelse for s, d in _statements(
                ast.Module(body=[child], type_ignores=[]), deferred))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, deferred
        inner = deferred or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield from _statements(node, inner)


def _resolve(module: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base) + (f".{node.module}" if node.module else "")


def _names(mods: dict, module: str, is_pkg: bool, node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    target = _resolve(module, is_pkg, node)
    subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in mods]
    return subs + ([target] if len(subs) < len(node.names) else [])


def imports() -> list[Import]:
    """Every import arrow between dongjing's modules, and of outside packages (target as named)."""
    mods = modules()
    arrows = []
    for module, (path, is_pkg) in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node, deferred in _statements(tree):
            for name in _names(mods, module, is_pkg, node):
                parts = name.split(".")
                if parts[0] != "dongjing":
                    arrows.append(Import(module, name, node.lineno, deferred))
                    continue
                for i in range(2, len(parts) + 1):  # a.b.c loads a.b first
                    step = ".".join(parts[:i])
                    if step in mods and step != module and not module.startswith(step + "."):
                        arrows.append(Import(module, step, node.lineno, deferred))
    return arrows


def own(arrows: list[Import]) -> list[Import]:
    return [a for a in arrows if a.target.split(".")[0] == "dongjing"]


def graph(arrows: list[Import]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in modules()}
    for a in own(arrows):
        edges[a.source].add(a.target)
    return edges


def layer_of(module: str) -> int:
    """The floor a module lives on (index into LAYERS)."""
    best, depth = len(LAYERS) - 1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and p.count(".") > depth:
                best, depth = i, p.count(".")
    return best


def upward(arrows: list[Import]) -> list[Import]:
    """Arrows from a lower floor to a higher one."""
    return [a for a in own(arrows) if layer_of(a.target) > layer_of(a.source)]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups, key=len, reverse=True)


def top_level_modules() -> list[str]:
    return sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")


def counts() -> dict[str, int]:
    arrows = imports()
    deferred_own = [a for a in own(arrows) if a.deferred]
    deferred_all = [a for a in arrows if a.deferred]
    groups = cycles(graph(arrows))
    return {
        "modules": len(modules()),
        "deferred imports (all)": len({(a.source, a.line) for a in deferred_all}),
        "deferred imports of dongjing": len({(a.source, a.line) for a in deferred_own}),
        "modules with deferred imports": len({a.source for a in deferred_all}),
        "cycles": len(groups),
        "largest cycle": len(groups[0]) if groups else 0,
        "imports against the layer order": len({(a.source, a.line) for a in upward(arrows)}),
        "top-level modules": len(top_level_modules()),
    }


PICTURE = ROOT / "docs" / "_build" / "prerendered" / "layers.svg"


def _boxes() -> dict[tuple[int, str], list[str]]:
    """(floor, package) -> its modules: one box per package per floor it has modules on."""
    boxes: dict[tuple[int, str], list[str]] = {}
    for module in modules():
        parts = module.split(".")
        package = parts[1] if len(parts) > 1 else "dongjing"
        boxes.setdefault((layer_of(module), package), []).append(module)
    return boxes


def _label(floor: int, package: str, members: list[str], floors_of: dict) -> str:
    if len(floors_of[package]) == 1 or package == "dongjing":
        return package
    leaves = sorted({m.split(".")[2] if m.count(".") > 1 else "Tensor" for m in members})
    shown = ", ".join(leaves[:3]) + (", ..." if len(leaves) > 3 else "")
    return f"{package}: {shown}"


def svg() -> str:
    """The floors, lowest at the bottom, each package a box on the floors it has modules on, and
    an arrow for each package that imports another (all arrows point down or sideways)."""
    boxes = _boxes()
    floors_of: dict[str, set] = {}
    for floor, package in boxes:
        floors_of.setdefault(package, set()).add(floor)
    labels = {key: _label(*key, members, floors_of) for key, members in boxes.items()}
    row_h, box_h, left, gap = 64, 30, 130, 14
    n = len(LAYERS)
    rows: dict[int, list] = {}
    for key in sorted(boxes, key=lambda k: (k[0], k[1])):
        rows.setdefault(key[0], []).append(key)
    widths = {key: 7 * len(labels[key]) + 20 for key in boxes}
    width = left + max(sum(widths[k] + gap for k in row) for row in rows.values()) + 20
    height = n * row_h + 20
    place = {}
    for floor, row in rows.items():
        x = left + (width - left - sum(widths[k] + gap for k in row)) / 2
        y = 10 + (n - 1 - floor) * row_h + (row_h - box_h) / 2
        for key in row:
            place[key] = (x, y, widths[key])
            x += widths[key] + gap
    of_module = {m: key for key, members in boxes.items() for m in members}
    edges = sorted({(of_module[a.source], of_module[a.target]) for a in own(imports())
                    if of_module[a.source] != of_module[a.target]})
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height}" '
           'font-family="sans-serif" font-size="12">',
           '<defs><marker id="arrow" markerWidth="6" markerHeight="6" refX="5" refY="3" '
           'orient="auto"><path d="M0,0 L6,3 L0,6 z" fill="#8a8a8a"/></marker></defs>']
    for floor, (name, _) in enumerate(LAYERS):
        y = 10 + (n - 1 - floor) * row_h
        fill = "#f4f6f8" if floor % 2 else "#ffffff"
        out.append(f'<rect x="0" y="{y}" width="{width:.0f}" height="{row_h}" fill="{fill}"/>')
        out.append(f'<text x="8" y="{y + row_h / 2 + 4:.0f}" font-weight="bold">'
                   f'{html.escape(name)}</text>')
    for a, b in edges:
        (xa, ya, wa), (xb, yb, wb) = place[a], place[b]
        if a[0] == b[0]:  # same floor: an arc above the boxes
            x1, x2, y1 = xa + wa / 2, xb + wb / 2, ya
            out.append(f'<path d="M{x1:.0f},{y1:.0f} Q{(x1 + x2) / 2:.0f},{y1 - 22:.0f} '
                       f'{x2:.0f},{y1:.0f}" fill="none" stroke="#8a8a8a" stroke-opacity="0.6" '
                       'marker-end="url(#arrow)"/>')
            continue
        out.append(f'<line x1="{xa + wa / 2:.0f}" y1="{ya + box_h:.0f}" x2="{xb + wb / 2:.0f}" '
                   f'y2="{yb:.0f}" stroke="#8a8a8a" stroke-opacity="0.35" '
                   'marker-end="url(#arrow)"/>')
    for key, (x, y, w) in place.items():
        out.append(f'<rect x="{x:.0f}" y="{y:.0f}" width="{w}" height="{box_h}" rx="4" '
                   'fill="#dbe8f5" stroke="#3d6d99"/>')
        out.append(f'<text x="{x + w / 2:.0f}" y="{y + box_h / 2 + 4:.0f}" '
                   f'text-anchor="middle">{html.escape(labels[key])}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> None:
    if "--svg" in argv:
        PICTURE.write_text(svg(), encoding="utf-8")
        print(f"wrote {PICTURE.relative_to(ROOT)}")
        return
    for key, value in counts().items():
        print(f"{key:32} {value}")
    if "--arrows" in argv:
        arrows = imports()
        print("\nagainst the layer order:")
        for a in upward(arrows):
            print(f"  {a.source}:{a.line} -> {a.target}"
                  f"  ({LAYERS[layer_of(a.source)][0]} -> {LAYERS[layer_of(a.target)][0]})")
        print("\ndeferred:")
        for a in arrows:
            if a.deferred:
                print(f"  {a.source}:{a.line} -> {a.target}")
        for group in cycles(graph(arrows)):
            print(f"\ncycle of {len(group)}: " + " ".join(group))


if __name__ == "__main__":
    main(sys.argv[1:])
