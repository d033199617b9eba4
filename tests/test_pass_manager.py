"""The pass manager: a pass that changes nothing returns its input graph (copy on write), and the
graph is verified after every pass in the test suite."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.compiler import pipeline
from dongjing.compiler.ir import PassResult, Rebuilder
from dongjing.compiler.passes import (
    eliminate_common_subexpressions,
    eliminate_dead_code,
    fold_constants,
    simplify_algebra,
)
from dongjing.errors import GraphError


def _graph():
    with dj.Graph() as g:
        x = dj.placeholder((3,), dj.float32, name="x")
        y = dj.tanh(x * 2.0) + x
    return g, y


@pytest.mark.parametrize("fn", [fold_constants, simplify_algebra,
                                eliminate_common_subexpressions, eliminate_dead_code])
def test_a_pass_that_changes_nothing_returns_its_input(fn):
    g, y = _graph()
    result = fn(g, [y.node])
    assert not result.changes
    assert result.graph is g and result.fetches == [y.node]


def test_a_pass_that_changes_something_builds_a_new_graph():
    with dj.Graph() as g:
        x = dj.placeholder((3,), dj.float32, name="x")
        y = x * 1.0
    result = simplify_algebra(g, [y.node])
    assert result.changes and result.graph is not g
    assert len(g.nodes) == 3  # the input graph is never changed


def test_the_users_graph_is_never_handed_to_the_passes():
    g, y = _graph()
    opt, fetches, _ = pipeline.optimize(g, [y.node], [], level=1)
    assert opt is not g


def test_verification_after_every_pass_names_the_pass(monkeypatch):
    def broken_pass(graph, fetches):
        rb = Rebuilder(graph, copy_on_write=False)
        for node in graph.nodes:
            rb.map[node] = rb.copy(node)
        new, moved = rb.finish(fetches)
        new.nodes.reverse()  # breaks SSA order
        return PassResult(new, moved, ["reversed"])

    monkeypatch.setattr(pipeline, "VERIFY", True)
    monkeypatch.setattr(pipeline, "CLEANUP", (broken_pass,))
    g, y = _graph()
    with pytest.raises(GraphError, match="broken_pass broke the graph"):
        pipeline.optimize(g, [y.node], [], level=1)


def test_sessions_agree_with_verification_on():
    g, y = _graph()
    xv = np.array([0.1, -0.5, 2.0], np.float32)
    assert pipeline.VERIFY
    np.testing.assert_allclose(dj.Session(g, optimize=2).run(y, {"x": xv}),
                               np.tanh(xv * 2) + xv, rtol=1e-6)
