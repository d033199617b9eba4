"""Session.run: fetch structures, feed validation before any work, assignment semantics, program
caching; dj.gradients rules; readable IR; the errors of symbolic misuse."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import dongjing as dj
from dongjing.graph.program import Program


@pytest.fixture
def small():
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((None, 3), name="x")
        k = dj.placeholder((), dj.int64, name="k")
        w = dj.Variable(np.arange(3, dtype=np.float32), name="w")
        y = x * w
        s = dj.sum(y)
    return g, x, k, w, y, s


XV = np.ones((2, 3), np.float32)


def test_fetch_structures(small):
    g, x, k, w, y, s = small
    sess = dj.Session(g)
    Pair = namedtuple("Pair", "a b")
    out = sess.run({"s": s, "nest": [y, (w, s)], "pair": Pair(s, w)}, {x: XV})
    assert out["s"] == 6.0 and isinstance(out["s"], np.ndarray)
    np.testing.assert_array_equal(out["nest"][0], [[0, 1, 2]] * 2)
    assert isinstance(out["nest"][1], tuple)
    np.testing.assert_array_equal(out["nest"][1][0], [0, 1, 2])  # a fetched Variable: its value
    assert isinstance(out["pair"], Pair) and out["pair"].a == 6.0
    assert sess.run(s, {"x": XV}) == 6.0  # a feed key may be the placeholder's name


def test_only_what_the_fetches_need_runs(small):
    g, x, k, w, y, s = small
    assert list(dj.Session(g).run([w, w * 2.0])[1]) == [0, 2, 4]  # x is not needed: no feed


@pytest.mark.parametrize("level", [0, 1, 2], ids=["interpreted", "cleaned", "compiled"])
def test_fetched_values_do_not_alias_variables(small, level):
    g, x, k, w, y, s = small
    with g.as_default():
        step = dj.assign(w, w + 1.0)
    sess = dj.Session(g, optimize=level)
    held, _ = sess.run([w, step])
    assert list(held) == [0, 1, 2], "Program contract (graph/program.py): a fetched value " \
        "must not alias a Variable's storage; this one changed when the run's assign committed"
    np.testing.assert_array_equal(w.numpy(), [1, 2, 3])


@pytest.mark.parametrize("feed,pattern", [
    ({}, r"need placeholder 'x' \(shape \(None, 3\) float32\), not given"),
    ({"x": XV, "nope": 1}, "no node of that name"),
    ({"x": np.ones((2, 4))}, r"'x': expected shape \(None, 3\) float32, got shape \(2, 4\)"),
    ({"x": np.ones(3)}, r"'x': expected shape \(None, 3\) float32, got shape \(3,\)"),
    ({"x": [["a", "b", "c"]]}, r"'x': expected .* got shape \(1, 3\) <U1 \(strings\)"),
    ({"x": np.array([[object()] * 3])}, r"'x': expected .* object \(Python objects\)"),
    ({"x": XV, "k": 2.5}, r"'k': expected shape \(\) int64, got shape \(\) float64"),
    ({"x": XV, "k": np.ones(2, np.int64)}, r"'k': expected shape \(\) int64, got shape \(2,\)"),
    ({"x": XV, "k": "SYMBOLIC"}, "got the symbolic tensor 'sym'"),
], ids=["missing", "unknown_key", "wrong_dim", "wrong_rank", "strings", "objects",
        "float_into_int", "int_wrong_rank", "symbolic_value"])
def test_feed_errors_name_the_placeholder(small, feed, pattern):
    g, x, k, w, y, s = small
    with g.as_default():
        step = dj.assign(w, w + 1.0)
        if isinstance(feed.get("k"), str):
            feed = {**feed, "k": dj.placeholder((), dj.int64, name="sym")}
    with pytest.raises(dj.FeedError, match=pattern):
        dj.Session(g).run([s, step] + ([k * 2] if "k" in feed else []), feed)
    np.testing.assert_array_equal(w.numpy(), [0, 1, 2])  # checked before anything ran


def test_feed_of_another_graphs_tensor(small):
    g, x, k, w, y, s = small
    with dj.Graph():
        other = dj.placeholder((3,), name="other")
    with pytest.raises(dj.FeedError, match="'other' belongs to another graph"):
        dj.Session(g).run(s, {x: XV, other: np.ones(3)})


def test_same_kind_values_are_converted_like_tf1(small):
    g, x, k, w, y, s = small
    sess = dj.Session(g)
    out = sess.run([y, k + 1], {x: [[1.0, 1.0, 1.0]], k: 4})  # Python floats, Python int
    assert out[0].dtype == np.float32 and out[1] == 5
    assert sess.run(y, {x: np.ones((1, 3), np.float64), k: 1}).dtype == np.float32
    assert sess.run(y, {x: np.ones((1, 3), np.int32)}).dtype == np.float32


LEVELS = pytest.mark.parametrize("level", [0, 1, 2], ids=["interpreted", "cleaned", "compiled"])


@LEVELS
def test_reads_see_values_from_before_the_run_and_assigns_commit_together(level):
    with dj.Graph() as g:
        a = dj.Variable(1.0, name="a")
        b = dj.Variable(2.0, name="b")
        swap = dj.group(dj.assign(a, b), dj.assign(b, a))
        read = a * 10.0
    sess = dj.Session(g, optimize=level)
    version = a._version[0]
    assert sess.run([swap, read]) == [None, 10.0]  # the read sees a's old value
    assert (a.item(), b.item()) == (2.0, 1.0)  # a swap: both old values committed
    assert a._version[0] == version + 1


@LEVELS
def test_a_failing_run_changes_no_variable(level):
    with dj.Graph() as g:
        v = dj.Variable(np.zeros(3), name="v")
        idx = dj.placeholder((), dj.int64, name="idx")
        step = dj.assign(v, v + 1.0)
        bad = dj.Variable(np.zeros(3))[idx]  # fails at run time for an index out of range
    sess = dj.Session(g, optimize=level)
    with pytest.raises(IndexError):
        sess.run([step, bad], {idx: 7})
    np.testing.assert_array_equal(v.numpy(), [0, 0, 0])
    sess.run([step, bad], {idx: 1})
    np.testing.assert_array_equal(v.numpy(), [1, 1, 1])


def test_assign_checks_shape_and_dtype_at_build_time():
    with dj.Graph():
        v = dj.Variable(np.zeros(3, np.float32), name="v")
        n = dj.Variable(np.zeros(3, np.int64), name="n", trainable=False)
        with pytest.raises(dj.ShapeError, match=r"shape \(4,\) does not fit the Variable 'v'"):
            dj.assign(v, np.ones(4, np.float32))
        with pytest.raises(dj.DTypeError, match="float32 value into the int64 Variable 'n'"):
            dj.assign(n, v)
        with pytest.raises(dj.GraphError, match="not a Variable"):
            dj.assign(v * 2.0, v)


def test_assign_eagerly_writes_in_place_and_group_is_none():
    v = dj.Variable([1.0, 2.0])
    storage = v._data
    assert dj.assign(v, [3.0, 4.0]) is v
    assert v._data is storage and list(v.numpy()) == [3.0, 4.0]
    assert dj.group(None) is None


def test_programs_are_cached_and_rebuilt_when_the_graph_changes(small):
    g, x, k, w, y, s = small
    sess = dj.Session(g, optimize=0)
    sess.run(s, {x: XV})
    sess.run(s, {x: np.ones((5, 3))})  # another batch size: same program
    assert len(sess._programs) == 1
    program = next(iter(sess._programs.values()))
    assert isinstance(program, Program) and program.graph is g and program.source is None
    with g.as_default():
        t = s + 1.0
    assert sess.run(t, {x: XV}) == 7.0 and len(sess._programs) == 2
    assert sess.optimized_graph(s) is g and sess.source(s) is None and sess.stats(s) == []


def test_session_uses_the_default_graph_and_closes():
    with dj.Graph() as g:
        c = dj.constant(3.0) * 2.0
        with dj.Session() as sess:
            assert sess.graph is g and sess.run(c) == 6.0
    with pytest.raises(dj.GraphError, match="closed"):
        sess.run(c)
    with pytest.raises(dj.GraphError, match="needs a graph"):
        dj.Session()


def test_gradients_sum_paths_and_return_none_when_unconnected():
    with dj.Graph() as g:
        x = dj.placeholder((), dj.float64, name="x")
        u = dj.placeholder((), dj.float64, name="u")
        y = x * x + dj.exp(x) * x  # x reaches y along several paths
        gx, gu = dj.gradients(y, [x, u])
        (gg,) = dj.gradients(gx, [x])  # second order, symbolically
    assert gu is None
    xv = 0.7
    got = dj.Session(g).run([gx, gg], {x: xv})
    np.testing.assert_allclose(got, [2 * xv + np.exp(xv) * (1 + xv),
                                     2 + np.exp(xv) * (2 + xv)], rtol=1e-12)


def test_gradients_of_non_scalar_need_grad_ys():
    with dj.Graph() as g:
        x = dj.placeholder((None, 2), name="x")
        y = x * 3.0
        with pytest.raises(dj.GraphError, match=r"'mul_\d+' has shape \(None, 2\).*grad_ys"):
            dj.gradients(y, [x])
        (gx,) = dj.gradients(y, [x], grad_ys=[dj.ones_like(y)])
    np.testing.assert_array_equal(dj.Session(g).run(gx, {x: np.ones((1, 2))}), [[3, 3]])


def test_shape_mismatch_at_build_time_names_op_shapes_and_line():
    with dj.Graph():
        a = dj.placeholder((None, 3), name="a")
        b = dj.placeholder((4, 5), name="b")
        with pytest.raises(dj.ShapeError, match=r"matmul.*\(None, 3\).*\(4, 5\).*"
                                                r"test_static_session.py:\d+"):
            dj.matmul(a, b)


def test_symbolic_tensors_have_no_value_and_say_so():
    with dj.Graph():
        x = dj.placeholder((None, 4), name="feat")
        y = dj.relu(x)
    assert repr(y) == "<Tensor 'relu_0' shape=(None, 4) dtype=float32>"
    for what, call in [(".numpy()", y.numpy), (".item()", y.item), ("float()", lambda: float(y))]:
        with pytest.raises(dj.GraphError, match=rf"{what}.*'relu_0'.*sess.run"):
            call()
    with pytest.raises(dj.GraphError, match="first dim is unknown"):
        len(x)
    with pytest.raises(dj.GraphError, match="Python control flow.*dj.cond"):
        bool(y)


def test_printed_graph_is_readable():
    with dj.Graph() as g:
        x = dj.placeholder((None, 64), name="x")
        w1 = dj.Variable(np.zeros((64, 256), np.float32), name="W1")
        dj.relu(dj.matmul(x, w1) + 1.0)
    text = str(g)
    assert text.splitlines()[0] == "graph(%x: f32[?,64]):"
    assert "  %matmul_0 = matmul(%x, %W1) : f32[?,256]" in text
    assert "  %constant = constant(1.0) : f32[]" in text
    assert g.get_node("matmul_0").shape == (None, 256) and len(g.nodes) == 6
    with pytest.raises(dj.GraphError, match="no node named 'nope'"):
        g.get_node("nope")


def test_verify_catches_a_broken_graph_and_lists_trainable_variables():
    with dj.Graph() as g:
        x = dj.placeholder((2,), name="x")
        w = dj.Variable([1.0, 2.0], name="w")
        frozen = dj.Variable([0.0, 0.0], name="frozen", trainable=False)
        y = dj.exp(x * w + frozen)
    g.verify()
    trainable = g.trainable_variables()
    assert len(trainable) == 1 and trainable[0] is w
    g.nodes.reverse()  # inputs now come after their users
    with pytest.raises(dj.GraphError, match="is not defined before it"):
        g.verify()
    g.nodes.reverse()
    y.node.shape = (3,)
    with pytest.raises(dj.GraphError, match=r"%exp_0: typed f32\[3\], but exp infers shape"):
        g.verify()


def test_feeding_an_intermediate_tensor_replaces_its_computation():
    with dj.Graph() as g:
        x = dj.placeholder((2,), name="x")
        h = dj.exp(x)
        y = h * 2.0
    sess = dj.Session(g)
    np.testing.assert_allclose(sess.run(y, {h: [1.0, 3.0]}), [2.0, 6.0])  # x is not needed
    np.testing.assert_allclose(sess.run([y, y], {x: [0.0, 0.0]}), [[2.0, 2.0]] * 2)


def test_assigning_a_buffer_read_as_a_constant_makes_it_state():
    buffer = dj.zeros(2)  # a plain tensor (like a running mean): captured as a constant
    with dj.Graph() as g:
        read = buffer + 1.0
        assert "constant" in str(g)
        update = dj.assign(buffer, read)
    sess = dj.Session(g)
    sess.run(update)
    sess.run(update)
    np.testing.assert_array_equal(buffer.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(sess.run(read), [3.0, 3.0])


def test_leaf_tensors_requiring_grad_are_captured_as_variables():
    w = dj.tensor([1.0, 2.0], requires_grad=True)
    with dj.Graph() as g:
        loss = dj.sum(w * w)
        (gw,) = dj.gradients(loss, [w])
    assert g.variables()[0].attrs["ref"] is w
    np.testing.assert_array_equal(dj.Session(g).run(gw), [2.0, 4.0])


@pytest.mark.parametrize("args, kwargs", [
    (((None, 3), dj.float32), {}),
    ((dj.float32, (None, 3)), {}),
    ((dj.float32,), {"shape": (None, 3)}),        # TensorFlow's tf.placeholder(dtype, shape=)
    ((), {"shape": [None, 3], "dtype": dj.float32}),
    ((dj.float32, [None, 3], "x"), {}),
])
def test_placeholder_arguments_in_either_order(args, kwargs):
    with dj.Graph().as_default():
        p = dj.placeholder(*args, **kwargs)
    assert p.shape == (None, 3) and p.dtype == dj.float32


@pytest.mark.parametrize("args, kwargs, pattern", [
    ((dj.float32, dj.float64), {}, "two dtypes"),
    (((1,), (2,)), {}, "two shapes"),
    ((dj.float32,), {"dtype": dj.float64}, "two dtypes"),
    ((dj.float32,), {}, "needs a shape"),
])
def test_placeholder_argument_errors(args, kwargs, pattern):
    with dj.Graph().as_default(), pytest.raises(dj.errors.GraphError, match=pattern):
        dj.placeholder(*args, **kwargs)
