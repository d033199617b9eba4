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


def _double_to_add(graph, fetches):
    """x * 2.0 -> x + x (exact in floating point)."""
    from dongjing.ops import OPS

    rb = Rebuilder(graph)
    changes = []
    for node in graph.nodes:
        ins = node.inputs
        if (node.op.name == "mul" and len(ins) == 2 and ins[1].op.name == "constant"
                and ins[1].attrs["value"].size == 1 and float(ins[1].attrs["value"]) == 2.0
                and ins[0].dtype == node.dtype and ins[0].shape == node.shape):
            x = rb.map[ins[0]]
            rb.map[node] = rb.copy(node, (x, x), op=OPS["add"])
            changes.append(f"%{node.name}: x * 2 -> x + x")
        else:
            rb.map[node] = rb.copy(node)
    return PassResult(*rb.finish(fetches), changes)


def test_a_registered_pass_runs_at_its_level_and_can_be_removed():
    g, y = _graph()
    feed = {"x": np.array([1.0, -2.0, 3.0], np.float32)}
    expected = np.tanh(feed["x"] * 2) + feed["x"]
    pipeline.register_pass(_double_to_add, level=1)
    try:
        for level, runs in ((0, False), (1, True), (2, True)):
            with dj.Session(g, optimize=level) as sess:
                np.testing.assert_allclose(sess.run(y, feed), expected, rtol=1e-6)
                names = [s["pass"] for s in sess.stats(y)]
                assert ("_double_to_add" in names) is runs
                if runs:
                    assert "x * 2 -> x + x" in " ".join(
                        c for s in sess.stats(y) for c in s["changes"])
    finally:
        pipeline.unregister_pass(_double_to_add)
    with dj.Session(g, optimize=1) as sess:
        sess.run(y, feed)
        assert "_double_to_add" not in [s["pass"] for s in sess.stats(y)]


def test_a_registered_pass_is_verified_and_must_return_a_pass_result(monkeypatch):
    monkeypatch.setattr(pipeline, "VERIFY", False)  # registered passes are checked regardless
    g, y = _graph()

    def breaks_the_graph(graph, fetches):
        new = Rebuilder(graph, copy_on_write=False)
        for node in graph.nodes:
            new.map[node] = new.copy(node, shape=(7,) if node.op.name == "tanh" else node.shape)
        return PassResult(*new.finish(fetches), ["changed a shape"])

    def returns_nothing(graph, fetches):
        return None

    for bad, pattern in ((breaks_the_graph, "registered pass breaks_the_graph broke the graph"),
                         (returns_nothing, "returned NoneType, not a PassResult")):
        pipeline.register_pass(bad)
        try:
            with dj.Session(g, optimize=1) as sess, pytest.raises(GraphError, match=pattern):
                sess.run(y, {"x": np.ones(3, np.float32)})
        finally:
            pipeline.unregister_pass(bad)


def test_register_pass_checks_its_arguments():
    with pytest.raises(ValueError, match="level must be 1 or 2"):
        pipeline.register_pass(_double_to_add, level=3)
    with pytest.raises(TypeError, match="needs a function"):
        pipeline.register_pass(42)
