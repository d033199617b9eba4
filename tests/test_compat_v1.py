"""dongjing.compat.v1 (`import dongjing.compat.v1 as tf`): each TF1 API against hand-derived
values."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.compat.v1 as tf
from dongjing.errors import DongjingError, DTypeError, FeedError, GraphError


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


# --- the default graph ---------------------------------------------------------------------------
def test_default_graph_persists_and_resets():
    a = tf.constant(1.0)
    g = tf.get_default_graph()
    assert a.node.graph is g and tf.constant(2.0).node.graph is g
    assert dj.get_default_graph() is None  # dongjing itself stays eager outside a context
    tf.reset_default_graph()
    assert tf.get_default_graph() is not g
    with pytest.raises(GraphError, match="another graph"):
        tf.Session().run(a + tf.constant(1.0))


def test_graph_as_default_scopes_ops():
    outer = tf.get_default_graph()
    g = tf.Graph()
    with g.as_default():
        assert tf.get_default_graph() is g
        c = tf.add(tf.constant(2.0), 3.0)
        with pytest.raises(GraphError, match="reset_default_graph"):
            tf.reset_default_graph()
    assert c.node.graph is g and tf.get_default_graph() is outer
    with tf.Session(graph=g) as sess:
        assert sess.run(c) == 5.0


def test_python_values_become_graph_ops():
    s = tf.add(1, 2)
    assert s.is_symbolic and s.dtype == np.int32  # TF's Python int is int32
    assert tf.constant(1.5).dtype == np.float32
    assert tf.constant(np.array([1.0])).dtype == np.float64  # NumPy arrays keep their dtype
    assert run(s) == 3


# --- placeholders --------------------------------------------------------------------------------
def test_placeholder_with_shape_checks_feeds():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    assert x.shape == (None, 2) and x.name == "x"
    assert run(tf.reduce_sum(x, 1), {x: [[1, 2], [3, 4]]}).tolist() == [3.0, 7.0]
    with pytest.raises(FeedError, match="'x'"):
        run(x, {x: [1.0, 2.0]})
    with pytest.raises(FeedError, match="'x'"):
        run(x * 2)


def test_unknown_rank_placeholder_takes_each_rank_fed():
    x = tf.placeholder("float")
    y = x * 3.0 + 1.0
    with tf.Session() as sess:
        assert sess.run(y, {x: 2}) == 7.0
        assert sess.run(y, {x: [1, 2]}).tolist() == [4.0, 7.0]
        assert sess.run(tf.reduce_sum(y), {x: [[1, 2], [3, 4]]}) == 34.0
        out = sess.run(y, {x: np.ones((2, 1, 3))})
        assert out.shape == (2, 1, 3) and out.dtype == np.float32
        with pytest.raises(FeedError, match="Placeholder"):
            sess.run(y)


def test_unknown_rank_with_variables_on_either_side():
    x = tf.placeholder(tf.float32)
    w = tf.Variable([2.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(w * x, {x: [1, 2]}).tolist() == [2.0, 4.0]
        assert sess.run(x - w, {x: 5}).tolist() == [3.0]
        assert sess.run(np.float32(10) / (x + 1), {x: [1.0, 4.0]}).tolist() == [5.0, 2.0]
        assert sess.run(tf.matmul(tf.reshape(x, [1, 2]), [[1.0], [1.0]]),
                        {x: [1, 2]}).tolist() == [[3.0]]


def test_unknown_rank_refuses_what_needs_a_rank():
    x = tf.placeholder("float")
    with pytest.raises(GraphError, match="unknown rank"):
        _ = x.shape
    with pytest.raises(GraphError, match="unknown rank"):
        dj.sum(x)
    with pytest.raises(GraphError, match="Python bool"):
        bool(x > 0)


def test_dj_placeholder_takes_dtype_first():
    with dj.Graph() as g:
        a = dj.placeholder(dj.float32, (None, 3))
        b = dj.placeholder((None, 3), dj.int64)
        c = dj.placeholder("float64", [2])
        with pytest.raises(GraphError, match="needs a shape"):
            dj.placeholder(dj.float32)
        with pytest.raises(GraphError, match="two dtypes"):
            dj.placeholder(dj.float32, dj.float64)
    assert (a.shape, a.dtype) == ((None, 3), np.float32)
    assert (b.shape, b.dtype) == ((None, 3), np.int64)
    assert (c.shape, c.dtype) == ((2,), np.float64)
    assert g.placeholders()[0] is a.node


# --- variables and sessions ----------------------------------------------------------------------
def test_variable_initializer_and_assign():
    v = tf.Variable([1.0, 2.0], name="v")
    n = tf.Variable(0, trainable=False)
    assert v.dtype == np.float32 and n.dtype == np.int32
    assert tf.global_variables() == [v, n] and tf.trainable_variables() == [v]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(v.assign([5.0, 6.0])).tolist() == [5.0, 6.0]  # TF gives the value
        assert sess.run(v).tolist() == [5.0, 6.0]
        sess.run(v.assign_add([1.0, 1.0]))
        sess.run(tf.assign_sub(v, [0.5, 0.5]))
        assert v.eval().tolist() == [5.5, 6.5]
        sess.run(tf.global_variables_initializer())  # back to the initial value
        assert sess.run(v).tolist() == [1.0, 2.0]
        sess.run(n.assign_add(3))
        assert sess.run(n) == 3


def test_variable_from_graph_initial_value():
    w = tf.Variable(tf.zeros([2, 3]) + 1.5)
    assert w.shape == (2, 3)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value"):
            sess.run(w)  # a Session reads a Variable only after initializing it, as TF
        sess.run(w.initializer)
        assert sess.run(w).tolist() == [[1.5] * 3] * 2
        p = tf.placeholder(tf.float32, [2])
        fed = tf.Variable(p)  # its value: fed to its initializer, as in TF
        sess.run(fed.initializer, {p: [3.0, 4.0]})
        assert sess.run(fed).tolist() == [3.0, 4.0]
    with pytest.raises(GraphError, match="not fully known"):
        tf.Variable(tf.placeholder(tf.float32, [None]))


def test_variable_operators_build_graph_ops():
    v = tf.Variable(3.0)
    sq = v * v  # a graph op reading v: it follows v's value and gives a gradient
    assert sq.is_symbolic
    (g,) = tf.gradients(sq, [v])
    with tf.Session() as sess:
        sess.run(v.assign(4.0))
        assert sess.run([sq, g]) == [16.0, 8.0]
        assert sess.run([v + 1, 1 - v, -v, v ** 2, v / 2, v < 5]) == [5, -3, -4, 16, 2, True]
    assert v in [v] and not (v == tf.Variable(3.0))  # identity, as TF1 compares variables


def test_tensor_eval_needs_a_default_session():
    x = tf.placeholder(tf.float32, [])
    y = x * 2
    with pytest.raises(GraphError, match="default session"):
        y.eval({x: 1.0})
    with tf.Session() as sess:
        assert y.eval({x: 1.5}) == 3.0
        assert y.eval(feed_dict={x: 2.0}, session=sess) == 4.0
    sess = tf.InteractiveSession()
    try:
        assert tf.get_default_session() is sess
        assert y.eval({x: 3.0}) == 6.0
        tf.global_variables_initializer().run()
    finally:
        sess.close()
    assert tf.get_default_session() is None
    assert y.get_shape().as_list() == []


def test_session_run_structures_and_operations():
    a, b = tf.constant(1.0), tf.constant([2, 3])
    init = tf.global_variables_initializer()  # no variables: a no-op
    out = run({"a": a, "pair": (b, [a]), "init": init})
    assert out["a"] == 1.0 and out["pair"][0].tolist() == [2, 3] and out["pair"][1] == [1.0]
    assert out["init"] is None
    with pytest.raises(GraphError, match="None"):
        run([a, None])


# --- math ----------------------------------------------------------------------------------------
def test_elementwise_and_comparisons():
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    assert run(tf.add(a, 1)).tolist() == [[2, 3], [4, 5]]
    assert run(tf.multiply(a, [[2.0], [3.0]])).tolist() == [[2, 4], [9, 12]]
    assert run(tf.subtract(a, a)).tolist() == [[0, 0], [0, 0]]
    assert run(tf.pow(a, 2)).tolist() == [[1, 4], [9, 16]]
    assert run(tf.equal(a, 2.0)).tolist() == [[False, True], [False, False]]
    assert run(tf.less(a, 3)).tolist() == [[True, True], [False, False]]
    assert run(tf.square(tf.constant(3))) == 9
    assert run(tf.divide(7.0, 2.0)) == 3.5
    with pytest.raises(DongjingError, match="tf.div on integer"):
        tf.div(7, 2)


def test_arrays_beside_tensors_take_the_tensors_dtype():
    a = tf.constant([1.0, 2.0])
    out = tf.add(a, np.array([0.5, 0.5]))  # float64 array converted to float32, as in TF
    assert out.dtype == np.float32 and run(out).tolist() == [1.5, 2.5]
    with pytest.raises(DTypeError, match="without loss"):
        tf.add(tf.constant([1, 2]), np.array([0.5, 1.0]))


def test_matmul_transposes_and_cast():
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    assert run(tf.matmul(a, a)).tolist() == [[7, 10], [15, 22]]
    assert run(tf.matmul(a, a, transpose_a=True)).tolist() == [[10, 14], [14, 20]]
    assert run(tf.matmul(a, a, transpose_b=True)).tolist() == [[5, 11], [11, 25]]
    c = tf.cast(tf.constant([1.7, -1.7, 0.2]), tf.int32)
    assert c.dtype == np.int32 and run(c).tolist() == [1, -1, 0]  # truncation toward zero
    assert run(tf.cast(tf.constant([True, False]), tf.float32)).tolist() == [1.0, 0.0]


def test_reductions_with_every_axis_spelling():
    a = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert run(tf.reduce_sum(a)) == 21
    assert run(tf.reduce_sum(a, axis=1)).tolist() == [6, 15]
    assert run(tf.reduce_sum(a, reduction_indices=[0])).tolist() == [5, 7, 9]
    assert run(tf.reduce_sum(a, 1, keepdims=True)).tolist() == [[6], [15]]
    assert run(tf.reduce_sum(a, 0, keep_dims=True)).tolist() == [[5, 7, 9]]
    assert run(tf.reduce_mean(a)) == 3.5
    assert run(tf.reduce_mean(a, axis=[0, 1], keepdims=True)).tolist() == [[3.5]]
    assert run(tf.reduce_max(a, axis=0)).tolist() == [4, 5, 6]
    assert run(tf.reduce_min(a, reduction_indices=1)).tolist() == [1, 4]
    i = tf.reduce_sum(tf.constant([1, 2, 3]))
    assert i.dtype == np.int32 and run(i) == 6
    with pytest.raises(DongjingError, match="reduce_mean of an integer"):
        tf.reduce_mean(tf.constant([1, 2]))
    with pytest.raises(Exception, match="not both"):
        tf.reduce_sum(a, axis=0, reduction_indices=0)


def test_argmax_defaults_to_axis_zero():
    a = tf.constant([[1.0, 9.0, 3.0], [4.0, 5.0, 6.0]])
    assert run(tf.argmax(a)).tolist() == [1, 0, 1]  # TF1: axis None means axis 0
    assert run(tf.argmax(a, 1)).tolist() == [1, 2]
    assert run(tf.argmin(a, axis=1)).tolist() == [0, 0]
    assert tf.argmax(a, 1).dtype == np.int64
    assert run(tf.argmax(a, 1, output_type=tf.int32)).dtype == np.int32


def test_clip_reshape_one_hot():
    a = tf.constant([[-2.0, 0.5], [3.0, 1.0]])
    assert run(tf.clip_by_value(a, 0.0, 1.0)).tolist() == [[0.0, 0.5], [1.0, 1.0]]
    assert run(tf.clip_by_value(a, tf.constant(0.0), 2.0)).tolist() == [[0, 0.5], [2, 1]]
    assert run(tf.reshape(a, [-1])).tolist() == [-2.0, 0.5, 3.0, 1.0]
    assert run(tf.reshape(a, [4, 1])).shape == (4, 1)
    assert run(tf.one_hot([0, 2], 3)).tolist() == [[1, 0, 0], [0, 0, 1]]
    assert tf.one_hot([1], 2).dtype == np.float32
    oh = tf.one_hot([1, 0], 2, on_value=5, off_value=-1)
    assert oh.dtype == np.int32 and run(oh).tolist() == [[-1, 5], [5, -1]]
    with pytest.raises(DongjingError, match="axis"):
        tf.one_hot([1], 2, axis=0)


def test_constants_and_fills():
    assert run(tf.constant(2.0, shape=[2, 2])).tolist() == [[2, 2], [2, 2]]
    assert run(tf.constant([1, 2, 3, 4], shape=[2, 2])).tolist() == [[1, 2], [3, 4]]
    assert run(tf.zeros([2])).tolist() == [0.0, 0.0] and tf.ones([1], tf.int32).dtype == np.int32
    assert run(tf.fill([2], 7)).tolist() == [7, 7]
    assert run(tf.range(3)).tolist() == [0, 1, 2]
    assert run(tf.transpose(tf.constant([[1, 2]]))).tolist() == [[1], [2]]
    assert run(tf.concat([[1], [2, 3]], 0)).tolist() == [1, 2, 3]
    assert run(tf.expand_dims(tf.constant([1, 2]), 1)).shape == (2, 1)


# --- nn ------------------------------------------------------------------------------------------
def test_nn_activations():
    assert run(tf.nn.relu([-1.0, 2.0])).tolist() == [0.0, 2.0]
    assert run(tf.nn.sigmoid([0.0]))[0] == 0.5
    p = run(tf.nn.softmax(tf.constant([[0.0, np.log(3.0)]])))
    assert p == pytest.approx(np.array([[0.25, 0.75]]))
    p0 = run(tf.nn.softmax(tf.constant([[0.0], [np.log(3.0)]]), axis=0))
    assert p0.ravel() == pytest.approx([0.25, 0.75])


def test_softmax_cross_entropy_v2():
    logits = tf.constant([[0.0, np.log(3.0)], [np.log(3.0), 0.0]])
    labels = tf.constant([[0.0, 1.0], [0.5, 0.5]])
    loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    # row 1: -log 0.75; row 2: -(log 0.75 + log 0.25) / 2
    expect = [-np.log(0.75), -(np.log(0.75) + np.log(0.25)) / 2]
    assert run(loss) == pytest.approx(expect, rel=1e-6)
    (gl,) = tf.gradients(tf.reduce_sum(loss), [logits])
    assert run(gl) == pytest.approx(np.array([[0.25, -0.25]] * 2), abs=1e-6)  # softmax - labels
    with pytest.raises(GraphError, match="named arguments"):
        tf.nn.softmax_cross_entropy_with_logits_v2(labels, logits)
    sparse = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 0], logits=logits)
    assert run(sparse) == pytest.approx([-np.log(0.75)] * 2, rel=1e-6)


def test_nn_losses_and_helpers():
    x = tf.constant([[-1.0, 0.0, 2.0]])
    z = tf.constant([[0.0, 1.0, 1.0]])
    got = run(tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x))
    sig = 1 / (1 + np.exp(-np.array([-1.0, 0.0, 2.0])))
    expect = -(np.array([0, 1, 1]) * np.log(sig) + np.array([1, 0, 0]) * np.log(1 - sig))
    assert got.ravel() == pytest.approx(expect, rel=1e-6)
    assert run(tf.nn.l2_loss(tf.constant([3.0, 4.0]))) == 12.5
    assert run(tf.nn.bias_add(tf.zeros([2, 2]), [1.0, 2.0])).tolist() == [[1, 2], [1, 2]]
    ones = tf.ones([400])
    dropped = run(tf.nn.dropout(ones, keep_prob=0.5))
    assert set(np.unique(dropped).tolist()) == {0.0, 2.0}  # kept ones are scaled by 1/keep_prob
    assert run(tf.nn.dropout(ones, rate=0.0)).tolist() == [1.0] * 400
    keep = tf.placeholder(tf.float32, [])  # a tensor keep_prob, fed each run
    assert run(tf.nn.dropout(ones, keep), {keep: 1.0}).tolist() == [1.0] * 400


def test_identity_and_stop_gradient():
    v = tf.Variable(2.0)
    g_id, g_stop = tf.gradients(tf.identity(v) * v, v), tf.gradients(tf.stop_gradient(v) * v, v)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(g_id) == [4.0] and sess.run(g_stop) == [2.0]


def test_eval_of_unknown_rank_values():
    x = tf.placeholder(tf.float32)
    with tf.Session():
        assert (x * 2).eval({x: [1.0, 2.0]}).tolist() == [2.0, 4.0]
        assert tf.reduce_sum(x).eval({x: 3.0}) == 3.0


# --- control flow and gradients ------------------------------------------------------------------
def test_while_loop_unwraps_a_single_variable():
    i = tf.while_loop(lambda i: i < 10, lambda i: i + 3, [0])
    assert not isinstance(i, list) and run(i) == 12
    same = tf.while_loop(lambda i: i < 10, lambda i: [i + 3], [0], return_same_structure=True)
    assert isinstance(same, list) and run(same) == [12]
    i, s = tf.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s + i), (0, 0))
    assert run([i, s]) == [4, 6]  # 0 + 1 + 2 + 3


def test_while_loop_over_an_unknown_rank_value():
    x = tf.placeholder(tf.float32)
    doubled = tf.while_loop(lambda v: tf.reduce_sum(v) < 10.0, lambda v: v * 2.0, [x])
    assert run(doubled, {x: 1.5}) == 12.0
    assert run(doubled, {x: [1.0, 2.0]}).tolist() == [4.0, 8.0]


def test_cond_takes_one_branch():
    p = tf.placeholder(tf.float32, [])
    c = tf.cond(p > 0, lambda: p * 2, lambda: -p)
    with tf.Session() as sess:
        assert sess.run(c, {p: 3.0}) == 6.0 and sess.run(c, {p: -4.0}) == 4.0
    one = tf.cond(p > 0, lambda: [p], lambda: [p + 1])
    assert run(one, {p: 1.0}) == 1.0  # a one-element list comes back unwrapped
    strict = tf.cond(p > 0, lambda: [p], lambda: [p + 1], strict=True)
    assert run(strict, {p: -1.0}) == [0.0]


def test_gradients_sum_over_non_scalar_ys():
    x = tf.placeholder(tf.float32, [3])
    (g,) = tf.gradients(x * x, [x])  # d(sum x^2)/dx = 2x, as TF sums ys
    assert run(g, {x: [1.0, 2.0, 3.0]}).tolist() == [2.0, 4.0, 6.0]
    w = tf.Variable(2.0)
    assert tf.gradients(x * 3.0, w) == [None]


# --- optimizers ----------------------------------------------------------------------------------
def _quadratic():
    w = tf.Variable([1.0, -2.0])
    loss = tf.reduce_sum(tf.square(w))  # gradient 2w
    return w, loss


def test_gradient_descent_step():
    w, loss = _quadratic()
    step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        assert sess.run(w) == pytest.approx([0.8, -1.6])  # w - 0.1 * 2w


def test_momentum_steps():
    w, loss = _quadratic()
    step = tf.train.MomentumOptimizer(0.1, momentum=0.9).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)  # accum = g = 2w0 = [2, -4]; w1 = w0 - 0.1 accum = [0.8, -1.6]
        sess.run(step)  # accum = 0.9 [2, -4] + 2 w1 = [3.4, -6.8]; w2 = w1 - 0.1 accum
        assert sess.run(w) == pytest.approx([0.46, -0.92])


def test_adam_follows_tf1_formula():
    w, loss = _quadratic()
    gs = tf.train.get_or_create_global_step()
    step = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=gs)
    w0 = np.array([1.0, -2.0])
    m = v = np.zeros(2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for t in (1, 2, 3):
            sess.run(step)
            g = 2 * w0
            m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
            lr_t = 0.1 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
            w0 = w0 - lr_t * m / (np.sqrt(v) + 1e-8)
            assert sess.run(w) == pytest.approx(w0, rel=1e-5)
        assert sess.run(gs) == 3


def test_compute_and_apply_gradients():
    w, loss = _quadratic()
    opt = tf.train.GradientDescentOptimizer(0.5)
    grads = opt.compute_gradients(loss)
    assert [v for _, v in grads] == [w]
    clipped = [(tf.clip_by_value(g, -1.0, 1.0), v) for g, v in grads]
    with tf.Session() as sess:
        sess.run(w.initializer)
        sess.run(opt.apply_gradients(clipped))
        assert sess.run(w).tolist() == [0.5, -1.5]


def test_minimize_through_unknown_rank_shares_optimizer_state():
    x = tf.placeholder("float")
    w = tf.Variable(0.0)
    loss = tf.reduce_sum(tf.square(w * x - 2.0 * x))  # minimum at w = 2
    step = tf.train.MomentumOptimizer(0.05, 0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step, {x: 1.0})  # g = 2(w - 2) = -4: accum -4, w = 0.2
        sess.run(step, {x: [1.0]})  # another rank, same slot: accum = -2 - 3.6, w = 0.48
        assert sess.run(w) == pytest.approx(0.48)


# --- what is not provided ------------------------------------------------------------------------
def test_missing_features_are_named():
    with pytest.raises(tf.NotProvidedError, match="tf.contrib.slim is not provided by dongjing"):
        _ = tf.contrib.slim
    with pytest.raises(tf.NotProvidedError, match="tf.nn.conv3d"):
        _ = tf.nn.conv3d
    with pytest.raises(tf.NotProvidedError, match="constraint"):
        tf.Variable(1.0, constraint=abs)
    with pytest.raises(DTypeError, match="'complex64'"):
        tf.placeholder("complex64")


# --- random ----------------------------------------------------------------------------------
def test_random_ops_draw_every_run_and_reinitialize_variables():
    tf.set_random_seed(0)
    r = tf.random_normal([2000], mean=1.0, stddev=2.0)
    t = tf.truncated_normal([2000], stddev=0.5)
    u = tf.random_uniform([2000], -1.0, 3.0)
    k = tf.random_uniform([2000], 0, 5, dtype=tf.int32)
    w = tf.Variable(tf.random_normal([3]))
    first = w.numpy().copy()
    with tf.Session() as sess:
        a, b = sess.run(r), sess.run(r)
        assert not np.array_equal(a, b) and a.dtype == np.float32
        assert abs(a.mean() - 1.0) < 0.2 and abs(a.std() - 2.0) < 0.2
        tv = sess.run(t)
        assert np.abs(tv).max() <= 1.0 and abs(tv.std() - 0.44) < 0.05  # cut at 2 sigma
        uv = sess.run(u)
        assert uv.min() >= -1.0 and uv.max() < 3.0 and abs(uv.mean() - 1.0) < 0.1
        kv = sess.run(k)
        assert kv.dtype == np.int32 and set(kv.tolist()) == {0, 1, 2, 3, 4}
        sess.run(w.initializer)
        assert not np.array_equal(sess.run(w), first)  # the initializer draws again
    s1 = tf.random_normal([4], seed=7)
    s2 = tf.random_normal([4], seed=7)
    assert run(s1).tolist() == run(s2).tolist()  # an op seed gives that op's own sequence


def _initialize_and_run(variable, fetches, feed_dict):
    with tf.Session() as sess:
        sess.run(variable.initializer)
        return sess.run(fetches, feed_dict)


def test_reset_graphs_are_freed():
    import gc
    import weakref

    x = tf.placeholder("float")
    v = tf.Variable(1.0)
    _initialize_and_run(v, v * x, {x: [1.0]})
    old = weakref.ref(tf.get_default_graph())
    del x, v
    tf.reset_default_graph()
    gc.collect()
    assert old() is None
