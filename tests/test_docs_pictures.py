"""The site's pictures (docs/_build/pictures.py) are drawn from code that runs, and the
pre-rendered copies used without Graphviz still match that code."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import dongjing as dj

SCRIPT = Path(__file__).resolve().parent.parent / "docs" / "_build" / "pictures.py"
spec = importlib.util.spec_from_file_location("dongjing_docs_pictures", SCRIPT)
pictures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pictures)


def test_every_picture_has_a_current_prerendered_copy():
    for name, make in pictures.PICTURES.items():
        dot = pictures.PRERENDERED / f"{name}.dot"
        assert (pictures.PRERENDERED / f"{name}.svg").exists(), name
        assert dot.read_text(encoding="utf-8") == dj.viz.to_dot(make()), (
            f"{name}: the code changed; run `python docs/_build/pictures.py --prerender`")


def test_the_pictures_show_what_the_pages_say():
    assert "AccumulateGrad" in dj.viz.to_dot(pictures.eager_tape())
    before, after = pictures.static_before(), pictures.static_after()
    assert len(after.nodes) < len(before.nodes)          # folding and CSE removed nodes
    assert "while_loop" in dj.viz.to_dot(pictures.while_loop())
    assert "while_loop" in dj.viz.to_dot(pictures.jit_while())  # the converted Python while
    assert "tanh" in dj.viz.to_dot(pictures.jit_trace())


def test_the_profiler_timeline_shows_one_training_step(tmp_path):
    path = pictures.draw_timeline(tmp_path)
    svg = path.read_text(encoding="utf-8")
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    for row in ("user", "op", "backward", "optimizer"):  # a row per kind of event
        assert f">{row}</text>" in svg, row
    assert "train step" in svg and "AccumulateGrad" in svg


def test_without_dot_the_site_gets_the_prerendered_copy_or_the_dot_text(tmp_path, monkeypatch):
    render_module = sys.modules["dongjing.viz.render"]
    monkeypatch.setattr(render_module.shutil, "which", lambda name: None)   # no Graphviz
    written = pictures.draw_graphs(tmp_path)
    assert [p.name for p in written] == [f"{n}.svg" for n in pictures.PICTURES]
    for path in written:  # current copies: the pre-rendered drawing is used
        prerendered = pictures.PRERENDERED / path.name
        assert path.read_text(encoding="utf-8") == prerendered.read_text(encoding="utf-8")
    text = pictures._fallback_svg("x", "digraph x {\n  a -> b;\n}\n")
    assert "apt-get install graphviz" in text and "a -&gt; b;" in text


def test_the_pipeline_picture_draws_every_step_of_both_schedules(tmp_path):
    svg = pictures.draw_pipeline(tmp_path).read_text()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    for schedule in ("gpipe", "1f1b"):
        assert f"{schedule}: 4 stages, 6 micro-batches, 18 time units, bubble 24/72" in svg
    for step in ("F0", "F5", "B0", "B5"):
        assert svg.count(f">{step}</text>") == 8  # 4 stages in each of the 2 schedules
