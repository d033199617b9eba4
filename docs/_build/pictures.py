"""The site's pictures, drawn by dongjing itself (`dj.viz`) from the code the pages show.

Run by the MkDocs hook (docs/_build/hooks.py) before every build, or by hand:
`python docs/_build/pictures.py`. Writes SVG files into docs/pictures/ (not committed).

Without Graphviz's `dot` program it says how to install it and, for the site only, uses the
pre-rendered copy in docs/_build/prerendered/ when its recorded DOT text is still what the code
gives (tests/test_docs_pictures.py checks that), else an SVG showing the DOT text.
`python docs/_build/pictures.py --prerender` refreshes those copies (needs `dot`).

Three pictures need no Graphviz: the architecture's floors (the copy tools/layers.py draws),
the profiler timeline (docs/_build/timeline.py, from a step profiled while the site builds) and
the pipeline schedules (docs/_build/pipeline_picture.py).
"""

from __future__ import annotations

import html
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "pictures"
PRERENDERED = ROOT / "docs" / "_build" / "prerendered"
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

import dongjing as dj  # noqa: E402  (after the path set-up: the build runs from a clone)
import dongjing.compiler  # noqa: E402


def eager_tape():
    """The README's first example: the tape `y.backward()` walks (w is used twice)."""
    w = dj.tensor([1.0], requires_grad=True)
    x = dj.tensor([2.0], requires_grad=True)
    a = dj.add(w, x)
    b = dj.add(w, 1)
    return dj.mul(a, b)


def _static_example():
    with dj.Graph() as g:
        x = dj.placeholder((4, 3), name="x")
        w = dj.Variable(dj.ones(3, 2).numpy() * 0.5, name="w")
        h = dj.relu(x @ w + 0.0)
        h2 = dj.relu(x @ w + 0.0)
        scale = dj.exp(dj.constant(0.0)) * 2.0
        y = dj.mean(dj.tanh(h + h2) * scale)
    return g, x, y


def static_before():
    """docs/compiler.md's forward graph as the user built it."""
    return _static_example()[0]


def static_after():
    """The same graph after the level-2 passes (folding, CSE, fusion where it pays)."""
    g, x, y = _static_example()
    return dongjing.compiler.build_program(g, [y.node], [x.node], level=2).graph


def while_loop():
    """Seed 002's counter: a while_loop with its condition and body as sub-graphs."""
    with dj.Graph() as g:
        dj.while_loop(lambda a, b: a < b, lambda a, b: (a + 2, b + 1),
                      [dj.constant(0), dj.constant(10)])
    return g


def jit_trace():
    """docs/index.md's dj.jit tab: the graph dj.jit traced from `objective`."""
    def objective(x, w):
        return dj.mean(dj.tanh(x @ w) ** 2)

    x = dj.tensor(np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(4, 2))
    return dj.jit(objective).graph(x, dj.tensor([[0.5], [-0.25]]))


def jit_while():
    """docs/control-flow.md's counter loop: the while_loop dj.jit's conversion traced."""
    def counters(first_counter, second_counter):
        while (first_counter < second_counter)[0]:
            first_counter += 2
            second_counter += 1
        return first_counter, second_counter

    return dj.jit(counters).graph(dj.tensor([0.0]), dj.tensor([10.0]))


def distributed_plan():
    """docs/distributed.md's plan: the pipeline `distribute="auto"` takes on 2 ranks for an MLP
    whose state is over max_memory on one (planned with fixed costs: no MPI, same every build)."""
    from dongjing.distributed import CostModel, planner

    dj.manual_seed(7)
    sizes = (16, 95, 95, 95, 95, 4)  # hidden sizes no tensor split fits
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers += [dj.nn.Linear(a, b)] + ([dj.nn.Tanh()] if i < len(sizes) - 2 else [])
    opt = dj.optim.SGD(dj.nn.Sequential(*layers).parameters(), lr=0.1, momentum=0.9)
    with dj.Graph() as g:
        x = dj.placeholder((None, sizes[0]), name="x")
        y = dj.placeholder((None,), dj.int64, name="y")
        h = x
        for layer in layers:
            h = layer(h)
        loss = dj.nn.functional.cross_entropy(h, y)
        train = opt.minimize(loss)
    fetches = [loss.node, train.node]
    facts = planner.analyse(g, fetches, {x.node: 32, y.node: 32})
    costs = CostModel(flops_per_s=1e10, bytes_per_s=5e9, node_overhead_s=5e-6,
                      link_latency_s=3e-5, link_bytes_per_s=2e9, source="given")
    whole = planner.choose(facts, costs, 1, fetches).memory_per_rank[0]
    return planner.choose(facts, costs, 2, fetches, max_memory=int(0.75 * whole))


PICTURES: dict[str, Callable] = {
    "eager-tape": eager_tape,
    "static-before": static_before,
    "static-after": static_after,
    "while-loop": while_loop,
    "jit-trace": jit_trace,
    "jit-while": jit_while,
    "distributed-plan": distributed_plan,
}


def _fallback_svg(name: str, dot_text: str) -> str:
    lines = [f"{name}: Graphviz's `dot` is not installed (apt-get install graphviz);",
             "the DOT text of this picture:", ""] + dot_text.splitlines()
    height = 16 * len(lines) + 20
    body = "".join(f'<text x="10" y="{20 + 16 * i}">{html.escape(line)}</text>'
                   for i, line in enumerate(lines))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="900" height="{height}" '
            f'font-family="monospace" font-size="12">{body}</svg>\n')


def _prerendered(name: str, dot_text: str) -> str | None:
    """The committed picture if it was drawn from this very DOT text, else None."""
    svg, dot = PRERENDERED / f"{name}.svg", PRERENDERED / f"{name}.dot"
    if svg.exists() and dot.exists() and dot.read_text(encoding="utf-8") == dot_text:
        return svg.read_text(encoding="utf-8")
    return None


def prerender() -> None:
    """Refresh docs/_build/prerendered/ (SVG + the DOT text it was drawn from); needs `dot`."""
    PRERENDERED.mkdir(parents=True, exist_ok=True)
    for name, make in PICTURES.items():
        obj = make()
        dj.viz.render(obj, str(PRERENDERED / f"{name}.svg"))
        (PRERENDERED / f"{name}.dot").write_text(dj.viz.to_dot(obj), encoding="utf-8")
        print(f"prerendered: {name}")


def draw_graphs(out: Path = OUT) -> list[Path]:
    """Render every picture in PICTURES to out/<name>.svg; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written, as_text = [], []
    for name, make in PICTURES.items():
        path = out / f"{name}.svg"
        obj = make()
        try:
            dj.viz.render(obj, str(path))
        except dj.viz.GraphvizMissing:
            dot_text = dj.viz.to_dot(obj)
            svg = _prerendered(name, dot_text)
            if svg is None:
                as_text.append(name)
                svg = _fallback_svg(name, dot_text)
            path.write_text(svg, encoding="utf-8")
        written.append(path)
    if as_text:  # the committed pictures cover every graph that has not changed since
        print(f"docs pictures: Graphviz's `dot` program is not installed and "
              f"{', '.join(as_text)} changed since docs/_build/prerendered/ was drawn, so "
              f"{'they show' if len(as_text) > 1 else 'it shows'} DOT text. Install Graphviz "
              "(`apt-get install graphviz`; macOS: `brew install graphviz`) and run "
              "`python docs/_build/pictures.py --prerender`.", file=sys.stderr)
    return written


def plot_bench(out: Path = OUT) -> Path | None:
    """The benchmark chart (bench.report.plot) of bench/results.json, when `make bench` wrote it."""
    results = ROOT / "bench" / "results.json"
    if not results.exists():
        return None
    sys.path.insert(0, str(ROOT))
    from bench.report import plot

    path = out / "bench.png"
    return path if plot(json.loads(results.read_text()), path) else None


def draw_layers(out: Path = OUT) -> Path:
    """docs/architecture.md's picture of the floors: the committed copy, which tools/layers.py
    draws from the import graph without Graphviz (tests/test_layering.py checks it is current)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "layers.svg"
    path.write_text((PRERENDERED / "layers.svg").read_text(encoding="utf-8"), encoding="utf-8")
    return path


def profiler_timeline():
    """docs/profiling.md's timeline: one SGD step of a small MLP under dj.profiler."""
    dj.manual_seed(0)
    model = dj.nn.Sequential(dj.nn.Linear(64, 128), dj.nn.ReLU(), dj.nn.Linear(128, 10))
    opt = dj.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y = dj.randn(32, 64), dj.randint(0, 10, (32,))

    def step():
        with dj.profiler.record_function("train step"):
            opt.zero_grad()
            loss = dj.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()

    step()  # one-time costs stay out of the picture
    with dj.profiler.profile() as prof:
        step()
    return prof.events()


def _sibling(name: str):
    """docs/_build/<name>.py, loaded as a module (docs/_build is not a package)."""
    spec = importlib.util.spec_from_file_location(f"dongjing_docs_{name}",
                                                  Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def draw_timeline(out: Path = OUT) -> Path:
    """Draw profiler_timeline() (docs/_build/timeline.py: plain SVG, no Graphviz)."""
    timeline = _sibling("timeline")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "profiler-timeline.svg"
    svg = timeline.draw_timeline(profiler_timeline(), "one SGD step of a 64-128-10 MLP, "
                                 "as dj.profiler recorded it while this site was built")
    path.write_text(svg, encoding="utf-8")
    return path


def draw_pipeline(out: Path = OUT) -> Path:
    """docs/distributed.md's schedules (docs/_build/pipeline_picture.py: plain SVG, no
    Graphviz): GPipe's and 1F1B's timelines for 4 stages and 6 micro-batches."""
    picture = _sibling("pipeline_picture")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "pipeline-schedules.svg"
    path.write_text(picture.draw(), encoding="utf-8")
    return path


def main() -> None:
    for path in draw_graphs() + [draw_layers(), draw_timeline(), draw_pipeline()]:
        print(f"docs pictures: {path.relative_to(ROOT)}")
    bench = plot_bench()
    print(f"docs pictures: {bench.relative_to(ROOT)}" if bench else
          "docs pictures: no bench/results.json (run `make bench`): no benchmark plot")


if __name__ == "__main__":
    prerender() if "--prerender" in sys.argv[1:] else main()
