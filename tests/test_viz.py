"""dj.viz: DOT text of tapes and graphs; rendering when Graphviz is installed."""

from __future__ import annotations

import shutil

import pytest

import dongjing as dj
from dongjing import viz


def test_tape_dot_names_backward_nodes_and_leaves():
    w = dj.tensor([1.0], requires_grad=True)
    x = dj.tensor([2.0], requires_grad=True)
    y = (w + x) * (w + 1)
    text = viz.to_dot(y)
    assert text.startswith("digraph tape")
    assert "MulBackward0" in text and text.count("AddBackward0") == 2
    assert text.count("AccumulateGrad") == 2  # w and x, each once
    assert text.count("->") == 5


def test_graph_dot_has_every_node_and_edge():
    with dj.Graph() as g:
        x = dj.placeholder((None, 3), name="x")
        w = dj.Variable([[1.0], [2.0], [3.0]], name="w")
        y = dj.relu(x @ w)
    text = viz.to_dot(g)
    for node in g.nodes:
        assert f'"{node.name}"' in text
    assert '"x" -> "matmul_0"' in text
    assert viz.to_dot(y) == text


def test_render_explains_missing_graphviz_or_writes_file(tmp_path):
    y = dj.tensor([1.0], requires_grad=True) * 2
    if shutil.which("dot") is None:
        with pytest.raises(viz.GraphvizMissing, match="apt-get install graphviz"):
            viz.render(y, str(tmp_path / "tape.png"))
    else:
        out = viz.render(y, str(tmp_path / "tape.svg"))
        assert (tmp_path / "tape.svg").read_text().lstrip().startswith("<")
        assert out.endswith("tape.svg")
