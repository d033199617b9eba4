"""Each compiler pass on hand-built graphs: what it must change and what it must leave alone."""

from __future__ import annotations

import numpy as np

import dongjing as dj
from dongjing.compiler import optimize
from dongjing.compiler.passes import (
    eliminate_common_subexpressions,
    eliminate_dead_code,
    fold_constants,
    simplify_algebra,
)
from dongjing.ops.nn import dropout_mask
from dongjing.ops.reduce import count


def ops_of(graph) -> list[str]:
    return [n.op.name for n in graph.nodes]


def test_dead_code_keeps_only_what_fetches_need():
    with dj.Graph() as g:
        x = dj.placeholder((3,), name="x")
        y = dj.exp(x)
        dj.log(x)  # unused
        v = dj.Variable(np.zeros(3, np.float32), name="v")
        dj.assign(v, x)  # not fetched: never runs
    out = eliminate_dead_code(g, [y.node])
    assert ops_of(out.graph) == ["placeholder", "exp"]
    assert out.fetches[0].name == y.node.name
    assert any("log" in c for c in out.changes)
    assert len(g.nodes) == 5  # the user's graph is untouched


def test_dead_code_never_removes_a_fetch_or_a_fetched_assignment():
    with dj.Graph() as g:
        x = dj.placeholder((3,), name="x")
        v = dj.Variable(np.zeros(3, np.float32), name="v")
        a = dj.assign(v, x * 2.0)
        unused = dj.exp(x)
    out = eliminate_dead_code(g, [a.node, unused.node])
    names = {n.name for n in out.graph.nodes}
    assert {a.node.name, unused.node.name, "v"} <= names


def test_fold_constants_folds_pure_ops_and_shape_counts():
    with dj.Graph() as g:
        c = dj.constant(np.array([1.0, 2.0], np.float32))
        d = dj.exp(c) + 1.0
        x = dj.placeholder((4, 5), name="x")
        n = count(x)
        y = x.sum() / n
    out = fold_constants(g, [d.node, y.node])
    fd, fy = out.fetches
    assert fd.op.name == "constant"
    np.testing.assert_allclose(fd.attrs["value"], np.exp([1.0, 2.0]) + 1, rtol=1e-6)
    folded_count = fy.inputs[1]
    assert folded_count.op.name == "constant" and folded_count.attrs["value"] == 20


def test_fold_constants_leaves_variables_placeholders_random_and_effects():
    with dj.Graph() as g:
        v = dj.Variable(np.ones(3, np.float32), name="v")
        w = v * 2.0
        c = dj.constant(np.ones(3, np.float32))
        m = dropout_mask(c, 0.5)
        a = dj.assign(v, c + 1.0)
        x = dj.placeholder((None, 3), name="x")
        k = count(x)  # unknown dim: cannot fold
    out = fold_constants(g, [w.node, m.node, a.node, k.node])
    fw, fm, fa, fk = out.fetches
    assert fw.op.name == "mul" and fw.inputs[0].op.name == "variable"
    assert fm.op.name == "dropout_mask"
    assert fa.op.name == "assign" and fa.inputs[1].op.name == "constant"  # its value folds
    assert fk.op.name == "count"


def test_cse_merges_twins_but_never_random_ops_effects_or_placeholders():
    with dj.Graph() as g:
        x = dj.placeholder((3,), name="x")
        x2 = dj.placeholder((3,), name="x2")
        a = dj.tanh(x) * 2.0
        b = dj.tanh(x) * 2.0
        m1 = dropout_mask(x, 0.5)
        m2 = dropout_mask(x, 0.5)
        v = dj.Variable(np.zeros(3, np.float32), name="v")
        s1 = dj.assign(v, x)
        s2 = dj.assign(v, x)
    fetches = [a.node, b.node, m1.node, m2.node, s1.node, s2.node, x2.node]
    out = eliminate_common_subexpressions(g, fetches)
    fa, fb, fm1, fm2, fs1, fs2, fx2 = out.fetches
    assert fa is fb
    assert fm1 is not fm2
    assert fs1 is not fs2
    assert fx2.name == "x2" and fx2 is not out.graph.get_node("x")
    assert any("merged" in c for c in out.changes)


def test_cse_merges_equal_constants_and_reads_of_one_variable():
    with dj.Graph() as g:
        x = dj.placeholder((3,), name="x")
        y = x * 0.5 + x * 0.5
    out = eliminate_common_subexpressions(g, [y.node])
    assert ops_of(out.graph).count("constant") == 1
    assert ops_of(out.graph).count("mul") == 1


def test_simplify_identities():
    with dj.Graph() as g:
        x = dj.placeholder((2, 3), name="x")
        ones = x * 1.0
        zero_added = -0.0 + x  # exact; 0.0 + x is not (for x = -0.0)
        nn = dj.neg(dj.neg(x))
        tt = dj.transpose(dj.transpose(x, -2, -1), -2, -1)
        rr = dj.reshape(dj.reshape(x, (3, 2)), (6,))
        same = dj.ops.cast(x * 3.0, dj.float32)
        sg = dj.stop_gradient(x)
    fetches = [ones, zero_added, nn, tt, sg]
    out = simplify_algebra(g, [t.node for t in fetches] + [rr.node, same.node])
    for f in out.fetches[:5]:
        assert f.name == "x"
    reshaped = out.fetches[5]
    assert reshaped.op.name == "reshape" and reshaped.inputs[0].name == "x"
    assert reshaped.attrs["shape"] == (6,)
    assert out.fetches[6].op.name == "mul"


def test_simplify_times_zero_is_shape_safe():
    with dj.Graph() as g:
        x = dj.placeholder((2, 3), dj.int64, name="x")
        z = x * 0  # integers only: a float NaN * 0 is NaN
        b = dj.placeholder((3,), dj.int64, name="b")
        zb = b * dj.constant(np.zeros((2, 3), np.int64))  # broadcasts: output is not b-shaped
    out = simplify_algebra(g, [z.node, zb.node])
    fz, fzb = out.fetches
    assert fz.op.name == "constant" and fz.shape == (2, 3)
    assert fzb.op.name == "mul"


def test_simplify_leaves_exp_log_alone():
    with dj.Graph() as g:
        x = dj.placeholder((3,), name="x")
        y = dj.exp(dj.log(x))
        z = dj.log(dj.exp(x))
    out = simplify_algebra(g, [y.node, z.node])
    assert [f.op.name for f in out.fetches] == ["exp", "log"]


def test_pass_manager_reaches_a_fixed_point_and_keeps_the_user_graph():
    with dj.Graph() as g:
        x = dj.placeholder((4, 3), name="x")
        w = dj.Variable(np.ones((3, 2), np.float32), name="w")
        h = dj.relu(x @ w - 0.0) * 1.0
        h2 = dj.relu(x @ w - 0.0) * 1.0
        y = (h + h2).sum() / count(h)
    before = str(g)
    opt, fetches, stats = optimize(g, [y.node], [x.node], level=1)
    assert str(g) == before
    assert ops_of(opt) == ["placeholder", "variable", "matmul", "relu", "add", "sum", "constant",
                           "div"]
    assert stats[-1]["changes"] == [] or stats[-1]["pass"] == "eliminate_dead_code"
    assert all({"pass", "nodes_before", "nodes_after", "changes"} <= set(s) for s in stats)
    # a second optimization of the optimized graph changes nothing more
    _, _, again = optimize(opt, fetches, [], level=1)
    assert not any(s["changes"] for s in again)
