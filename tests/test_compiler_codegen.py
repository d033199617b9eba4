"""Generated code: readable source in linecache, state semantics of assignments, fresh fetches,
fused kernels and the memory plan, through dj.Session at optimize=1 and 2."""

from __future__ import annotations

import linecache
import re
import traceback

import numpy as np
import pytest

import dongjing as dj
from dongjing.compiler import build_program

LEVELS = pytest.mark.parametrize("level", [1, 2])


def _mlp_graph():
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((4, 3), name="x")
        w = dj.Variable(np.full((3, 2), 0.5, np.float32), name="w")
        h = dj.relu(x @ w + 1.0)
        loss = dj.mean(h * h)
    return g, x, w, h, loss


@LEVELS
def test_source_has_one_line_per_node_naming_it_with_the_user_line(level):
    g, x, w, h, loss = _mlp_graph()
    sess = dj.Session(g, optimize=level)
    source = sess.source(loss)
    assert source.startswith("def program(feeds):")
    lines = source.splitlines()
    for node in sess.optimized_graph(loss).nodes:
        if node.op.name != "placeholder":  # generated variables; the node named in a comment
            mine = [line for line in lines if line.endswith(f"# %{node.name}  {node.source}")]
            assert len(mine) == 1 and re.match(r"    v\d+ = ", mine[0]), node.name
    assert "test_compiler_codegen.py:" in source  # the line that created each node
    assert "v0, = feeds  # %x" in source
    assert "_np.matmul(v0, v1" in source  # lowered to the ufunc, not a generic call
    assert any(s["pass"] == "codegen" for s in sess.stats(loss))


def test_tracebacks_step_into_the_generated_source():
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((3,), name="x")
        idx = dj.placeholder((1,), dj.int64, name="idx")
        picked = x[idx] * 2.0
    sess = dj.Session(g, optimize=2)
    with pytest.raises(IndexError) as info:
        sess.run(picked, {x: np.ones(3, np.float32), idx: np.array([7])})
    frames = traceback.extract_tb(info.value.__traceback__)
    generated = [f for f in frames if f.filename.startswith("<dongjing-program-")]
    assert generated, "no frame of the generated function"
    text = linecache.getline(generated[0].filename, generated[0].lineno)
    assert "getitem" in text and "  test_compiler_codegen.py:" in text


@LEVELS
def test_reads_see_old_values_and_assignments_commit_together(level):
    g = dj.Graph()
    with g.as_default():
        v = dj.Variable(np.array([1.0, 2.0], np.float32), name="v")
        u = dj.Variable(np.array([10.0, 20.0], np.float32), name="u")
        step = dj.group(dj.assign(v, u), dj.assign(u, v))  # a swap
        seen = v * 2.0
    sess = dj.Session(g, optimize=level)
    _, before = sess.run([step, seen])
    np.testing.assert_array_equal(before, [2.0, 4.0])
    np.testing.assert_array_equal(v.numpy(), [10.0, 20.0])
    np.testing.assert_array_equal(u.numpy(), [1.0, 2.0])


@LEVELS
def test_a_failing_run_changes_no_variable(level):
    g = dj.Graph()
    with g.as_default():
        v = dj.Variable(np.zeros(3, np.float32), name="v")
        idx = dj.placeholder((1,), dj.int64, name="idx")
        update = dj.assign(v, v * 0.5 + 1.0)
        bad = dj.sum(v[idx])
    sess = dj.Session(g, optimize=level)
    with pytest.raises(IndexError):
        sess.run([update, bad], {idx: np.array([5])})
    np.testing.assert_array_equal(v.numpy(), [0.0, 0.0, 0.0])
    sess.run([update, bad], {idx: np.array([1])})
    np.testing.assert_array_equal(v.numpy(), [1.0, 1.0, 1.0])


@LEVELS
def test_fetched_arrays_are_fresh_across_runs(level):
    g, x, w, h, loss = _mlp_graph()
    with g.as_default():
        h2 = h * 3.0
        update = dj.assign(w, w * 2.0)
    sess = dj.Session(g, optimize=level)
    xv = np.ones((4, 3), np.float32)
    first_h, first_w, _ = sess.run([h2, w, update], {x: xv})
    kept_h, kept_w = first_h.copy(), first_w.copy()
    sess.run([h2, w, update], {x: xv * 2})
    np.testing.assert_array_equal(first_h, kept_h)
    np.testing.assert_array_equal(first_w, kept_w)
    np.testing.assert_array_equal(w.numpy(), np.full((3, 2), 2.0, np.float32))


def test_in_place_updates_write_the_variables_own_array():
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((2,), name="x")
        v = dj.Variable(np.zeros(2, np.float32), name="v")
        step = dj.assign(v, v * 0.9 + x)
    storage = v._data
    program = build_program(g, [step.node], [x.node], 2)
    assert "(written in place)" in program.source
    for _ in range(2):
        program([np.ones(2, np.float32)])
    assert v._data is storage
    np.testing.assert_allclose(storage, [1.9, 1.9], rtol=1e-6)
    assert v._version[0] == 2


def test_level_one_plans_no_buffers_and_level_two_does():
    g, x, w, h, loss = _mlp_graph()
    one = build_program(g, [loss.node], [x.node], 1)
    two = build_program(g, [loss.node], [x.node], 2)
    assert "out=_buf" not in one.source
    assert "out=_buf" in two.source
    xv = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(one([xv])[0], two([xv])[0], rtol=1e-6)


def test_feeding_an_intermediate_skips_what_only_it_needs():
    g, x, w, h, loss = _mlp_graph()
    sess = dj.Session(g, optimize=2)
    hv = np.full((4, 2), 2.0, np.float32)
    assert sess.run(loss, {h: hv}) == pytest.approx(4.0)
    program = build_program(g, [loss.node], [h.node], 2)
    assert "matmul" not in program.source and f"= feeds  # %{h.node.name}" in program.source
