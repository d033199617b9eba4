"""What keeps a first compile cheap, checked for exactness: a lazy Rebuilder builds the very graph
an eager one does (and no node at all when nothing changes), and the pass manager never reruns a
pass on a graph it already left unchanged."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import dongjing as dj
from dongjing.compiler import ir, pipeline


def _module(name: str):
    """A pass's module (the package re-exports the pass function under the module's name)."""
    return importlib.import_module(f"dongjing.compiler.passes.{name}")


fold_module, simplify_module, cse_module, dce_module = (
    _module(n) for n in ("fold_constants", "simplify_algebra",
                         "eliminate_common_subexpressions", "eliminate_dead_code"))

PASS_MODULES = [
    (fold_module, fold_module.fold_constants),
    (simplify_module, simplify_module.simplify_algebra),
    (cse_module, cse_module.eliminate_common_subexpressions),
    (dce_module, dce_module.eliminate_dead_code),
]


def _rnn_graph(steps: int = 4):
    """An unrolled tanh RNN with its gradients: repeated permutes (CSE), a broadcast_to_like
    (simplify, then fold), constants and dead nodes."""
    rng = np.random.default_rng(0)
    with dj.Graph() as g:
        x = dj.placeholder((steps, 2, 3), dj.float32, name="x")
        w_xh = dj.Variable(rng.standard_normal((3, 4)).astype(np.float32), name="w_xh")
        w_hh = dj.Variable(rng.standard_normal((4, 4)).astype(np.float32), name="w_hh")
        b = dj.Variable(np.zeros(4, np.float32), name="b")
        h = dj.constant(np.zeros((2, 4), np.float32))
        for t in range(steps):
            h = dj.tanh(x[t] @ w_xh + h @ w_hh + b)
        loss = (h * 1.0 + 0.0).sum()
        grads = dj.gradients(loss, [w_xh, w_hh, b])
    return g, [loss.node, *[gr.node for gr in grads]]


def _shape(graph, fetches) -> tuple:
    """The graph's full text and the fetches' names: equal texts are equal graphs."""
    return str(graph), [f.name for f in fetches]


@pytest.mark.parametrize("module,fn", PASS_MODULES, ids=lambda v: getattr(v, "__name__", ""))
def test_lazy_rebuilding_builds_the_graph_an_eager_one_does(module, fn, monkeypatch):
    g, fetches = _rnn_graph()
    graphs = [(g, fetches)]
    for _ in range(3):  # the first round of cleanup passes: each sees a changed graph
        for _, step in PASS_MODULES:
            r = step(*graphs[-1])
            graphs.append((r.graph, r.fetches))
    changed = 0
    for graph, fs in graphs:
        lazy = fn(graph, fs)
        changed += bool(lazy.changes)
        monkeypatch.setattr(module, "Rebuilder",
                            lambda old, copy_on_write=True, lazy=False: ir.Rebuilder(old))
        eager = fn(graph, fs)
        monkeypatch.undo()
        assert lazy.changes == eager.changes
        assert (lazy.graph is graph) == (eager.graph is graph)
        assert _shape(lazy.graph, lazy.fetches) == _shape(eager.graph, eager.fetches)
        if lazy.graph is not graph:
            lazy.graph.verify()
            assert all(n.graph is lazy.graph for n in lazy.graph.nodes)
    assert changed  # the graphs above give every pass something to change


def test_a_lazy_rebuilder_that_changes_nothing_makes_no_node():
    g, fetches = _rnn_graph(2)
    rb = ir.Rebuilder(g, lazy=True)
    for node in g.nodes:
        rb.map[node] = rb.copy(node)
    assert all(rb.map[n] is n for n in g.nodes)
    assert rb._graph.nodes == []  # nothing copied yet
    assert rb.finish(fetches) == (g, fetches)


def test_a_lazy_rebuilder_copies_on_the_first_change_and_on_reading_its_graph():
    g, fetches = _rnn_graph(2)
    rb = ir.Rebuilder(g, lazy=True)
    first = g.nodes[0]
    rb.map[first] = rb.copy(first)
    assert rb.map[first] is first
    new_graph = rb.graph  # reading the graph makes the copies put off so far
    assert [n.name for n in new_graph.nodes] == [first.name]
    assert new_graph.nodes[0] is not first and new_graph.nodes[0].graph is new_graph
    for node in g.nodes[1:]:
        rb.map[node] = rb.copy(node)  # inputs are handed-out old nodes: emit replaces them
    out, moved = rb.finish(fetches)
    assert out is not g and [n.name for n in out.nodes] == [n.name for n in g.nodes]
    out.verify()
    assert all(f.graph is out for f in moved)


def test_the_pass_manager_skips_a_pass_on_a_graph_it_left_unchanged():
    calls = []

    def counting(graph, fetches):
        calls.append(graph)
        return ir.PassResult(graph, list(fetches), [])

    with dj.Graph() as g:
        x = dj.placeholder((3,), dj.float32, name="x")
        y = dj.tanh(x * 2.0) + x
    pipeline.register_pass(counting, level=1)
    try:
        pipeline.optimize(g, [y.node], [], level=2)
    finally:
        pipeline.unregister_pass(counting)
    assert len(calls) == len({id(c) for c in calls}) == 1


def test_optimized_rnn_runs_as_before_the_changes():
    """Eager, O1 and O2 agree on the unrolled RNN (the passes above rebuilt it lazily)."""
    g, fetches = _rnn_graph(5)
    feed = {"x": np.random.default_rng(1).standard_normal((5, 2, 3)).astype(np.float32)}
    results = [dj.Session(g, optimize=level).run(fetches, feed) for level in (0, 1, 2)]
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def _mlp_graph():
    """A small training step: dead updates, constants to fold, repeated transposes."""
    rng = np.random.default_rng(2)
    with dj.Graph() as g:
        x = dj.placeholder((8, 5), dj.float32, name="x")
        w1 = dj.Variable(rng.standard_normal((5, 6)).astype(np.float32), name="w1")
        w2 = dj.Variable(rng.standard_normal((6, 3)).astype(np.float32), name="w2")
        scale = dj.constant(np.float32(2.0)) * dj.constant(np.float32(0.5))
        h = dj.relu(x @ w1 * scale)
        loss = ((h @ w2) ** 2).mean()
        grads = dj.gradients(loss, [w1, w2])
        updates = [dj.assign(w, w - 0.1 * gr) for w, gr in zip([w1, w2], grads)]
    return g, [loss.node, *[gr.node for gr in grads], *[u.node for u in updates]]


@pytest.mark.parametrize("make", [_rnn_graph, _mlp_graph])
@pytest.mark.parametrize("level", [1, 2])
def test_skipping_passes_reaches_the_same_fixed_point(make, level, monkeypatch):
    g, fetches = make()
    fast, fast_fetches, fast_stats = pipeline.optimize(g, fetches, [], level)
    monkeypatch.setattr(pipeline, "IDEMPOTENT", frozenset())
    monkeypatch.setattr(pipeline, "LOCAL", frozenset())
    slow, slow_fetches, slow_stats = pipeline.optimize(g, fetches, [], level)
    assert _shape(fast, fast_fetches) == _shape(slow, slow_fetches)
    assert len(fast_stats) <= len(slow_stats)
    changed = [s for s in slow_stats if s["changes"]]
    assert [s["changes"] for s in fast_stats if s["changes"]] == [s["changes"] for s in changed]
