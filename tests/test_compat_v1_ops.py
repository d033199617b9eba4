"""compat.v1's tf.nn functions, tensors where TF takes them (shapes, stddevs, keep_prob read at
run time), array functions and control functions, against NumPy; gradients by finite
differences in float64 (tests/test_compat_v1_nn_conv.py's fd_check)."""

from __future__ import annotations

import numpy as np
import pytest
from test_compat_v1_nn_conv import fd_check

import dongjing as dj
import dongjing.compat.v1 as tf
from dongjing.compat.v1 import nn_ops
from dongjing.errors import GraphError, ShapeError

RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def run(fetch, feeds=None, level=2):
    with tf.Session() as sess:
        sess.optimize = level
        return sess.run(fetch, feeds)


def test_activations_match_numpy_and_differentiate():
    x = np.array([-2.5, -0.7, -0.1, 0.2, 0.9, 7.0])
    got = run([tf.nn.relu6(x), tf.nn.leaky_relu(x), tf.nn.leaky_relu(x, alpha=1.5),
               tf.nn.elu(x), tf.nn.selu(x), tf.nn.softplus(x), tf.nn.softsign(x)])
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    want = [np.clip(x, 0, 6), np.where(x > 0, x, 0.2 * x), np.where(x > 0, x, 1.5 * x),
            np.where(x > 0, x, np.expm1(x)), scale * np.where(x > 0, x, alpha * np.expm1(x)),
            np.log1p(np.exp(x)), x / (1 + np.abs(x))]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    for fn in (tf.nn.elu, tf.nn.selu, tf.nn.softplus, tf.nn.leaky_relu, tf.nn.softsign):
        fd_check(fn, [x.reshape(2, 3)])


def test_moments_batch_normalization_l2_normalize():
    x = RNG.standard_normal((4, 3, 2))
    mean, var = run(tf.nn.moments(tf.constant(x), [0, 1]))
    np.testing.assert_allclose(mean, x.mean((0, 1)))
    np.testing.assert_allclose(var, x.var((0, 1)))
    kept = run(tf.nn.moments(tf.constant(x), [0], keep_dims=True))
    assert kept[0].shape == (1, 3, 2)
    scale, offset = RNG.standard_normal(2), RNG.standard_normal(2)
    got = run(tf.nn.batch_normalization(x, mean, var, offset, scale, 1e-3))
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(var + 1e-3) * scale + offset)
    got = run(tf.nn.l2_normalize(x, axis=1))
    np.testing.assert_allclose(got, x / np.sqrt((x * x).sum(1, keepdims=True)))

    def bn(x, s, o):
        m, v = tf.nn.moments(x, [0])
        return tf.nn.batch_normalization(x, m, v, o, s, 1e-3)

    fd_check(bn, [x[:, :, 0], RNG.standard_normal(3), RNG.standard_normal(3)])
    fd_check(lambda x: tf.nn.l2_normalize(x, 1), [x[:, :, 0]])


def test_bias_add_both_layouts():
    x = RNG.standard_normal((2, 3, 4, 5))
    b = RNG.standard_normal(3)
    np.testing.assert_allclose(run(tf.nn.bias_add(x, b, data_format="NCHW")),
                               x + b.reshape(1, 3, 1, 1))
    np.testing.assert_allclose(run(tf.nn.bias_add(x, RNG.standard_normal(5) * 0 + 1)), x + 1)


def test_embedding_lookup_top_k_in_top_k():
    table = RNG.standard_normal((6, 3))
    ids = np.array([[0, 5], [2, 2]])
    np.testing.assert_allclose(run(tf.nn.embedding_lookup(table, ids)), table[ids])
    fd_check(lambda t: tf.nn.embedding_lookup(t, tf.constant(ids)), [table])
    p = np.array([[0.1, 0.7, 0.2, 0.7], [0.5, 0.1, 0.3, 0.0]])
    values, indices = run(tf.nn.top_k(p, 2))
    np.testing.assert_allclose(values, [[0.7, 0.7], [0.5, 0.3]])
    assert indices.dtype == np.int32 and set(indices[0]) == {1, 3} and list(indices[1]) == [0, 2]
    np.testing.assert_array_equal(run(tf.nn.in_top_k(p.astype(np.float32), [3, 2], 1)),
                                  [True, False])


def test_dropout_with_a_fed_keep_prob():
    keep = tf.placeholder(tf.float32)
    x = tf.ones([200, 50])
    out = tf.nn.dropout(x, keep)
    dj.manual_seed(0)
    with tf.Session() as sess:
        full = sess.run(out, {keep: 1.0})
        half = sess.run(out, {keep: 0.5})
    np.testing.assert_array_equal(full, 1.0)
    assert set(np.unique(half)) == {0.0, 2.0}
    assert abs((half == 0).mean() - 0.5) < 0.03
    with pytest.raises(GraphError, match="keep_prob or rate"):
        tf.nn.dropout(x)


def test_random_ops_take_tensors():
    """The VAE's `tf.random_normal(shape, stddev=1. / tf.sqrt(...))` and random shapes read
    from tf.shape at run time."""
    dj.manual_seed(0)
    wide = tf.random_normal([20000], stddev=1. / tf.sqrt(400 / 2.))
    z = tf.placeholder(tf.float32, [None, 2])
    eps = tf.random_normal(tf.shape(z), dtype=tf.float32, mean=0., stddev=1.0)
    assert eps.shape == (None, 2)
    u = tf.random_uniform([10000], minval=tf.constant(2.0), maxval=tf.constant(3.0))
    with tf.Session() as sess:
        w, e, uu = sess.run([wide, eps, u], {z: np.zeros((5, 2))})
    assert abs(w.std() - 1 / np.sqrt(200)) < 0.002
    assert e.shape == (5, 2)
    assert 2.0 <= uu.min() and uu.max() < 3.0 and abs(uu.mean() - 2.5) < 0.02


def test_shapes_read_at_run_time():
    x = tf.placeholder(tf.float64, [None, 3])
    n = tf.shape(x)[0]
    flat = tf.reshape(x, [-1])
    back = tf.reshape(flat, tf.shape(x))
    rows = tf.reshape(x, tf.stack([n, 3, 1]))
    assert back.shape == (None, 3) and rows.shape == (None, 3, 1)
    steps = tf.range(0, n) * 2
    feed = {x: RNG.standard_normal((4, 3))}
    got = run([tf.shape(x), tf.size(x), tf.rank(x), back, rows, steps], feed)
    np.testing.assert_array_equal(got[0], [4, 3])
    assert got[1] == 12 and got[2] == 2
    np.testing.assert_allclose(got[3], feed[x])
    assert got[4].shape == (4, 3, 1)
    np.testing.assert_array_equal(got[5], [0, 2, 4, 6])
    with pytest.raises(ShapeError, match="cannot reshape"):
        run(tf.reshape(x, tf.stack([n, 4])), feed)
    fd_check(lambda x: tf.reshape(x * x, tf.shape(tf.transpose(x))), [RNG.standard_normal((2, 3))])


def test_array_functions_match_numpy():
    a = RNG.standard_normal((4, 6))
    t = tf.constant(a)
    parts = run(tf.split(t, 3, 1))
    assert [p.shape for p in parts] == [(4, 2)] * 3
    np.testing.assert_allclose(np.concatenate(parts, 1), a)
    sizes = run(tf.split(t, [1, -1, 2], 1))
    assert [p.shape[1] for p in sizes] == [1, 3, 2]
    np.testing.assert_allclose(run(tf.unstack(t, axis=1))[2], a[:, 2])
    np.testing.assert_allclose(run(tf.tile(t, [2, 1])), np.tile(a, (2, 1)))
    np.testing.assert_allclose(run(tf.pad(t, [[1, 0], [2, 3]])), np.pad(a, ((1, 0), (2, 3))))
    np.testing.assert_allclose(run(tf.pad(t, [[1, 1], [2, 2]], "REFLECT")),
                               np.pad(a, ((1, 1), (2, 2)), "reflect"))
    np.testing.assert_allclose(run(tf.slice(t, [1, 2], [2, -1])), a[1:3, 2:])
    np.testing.assert_allclose(run(tf.gather(t, [3, 0, 3])), a[[3, 0, 3]])
    np.testing.assert_allclose(run(tf.gather(t, [[1], [5]], axis=1)), a[:, [[1], [5]]])
    mask = a[:, 0] > 0
    np.testing.assert_allclose(run(tf.boolean_mask(t, mask)), a[mask])
    np.testing.assert_array_equal(run(tf.sequence_mask([1, 3, 0], 4)),
                                  np.arange(4) < np.array([[1], [3], [0]]))
    np.testing.assert_array_equal(run(tf.sequence_mask(tf.constant([2, 1]))),
                                  [[True, True], [True, False]])
    np.testing.assert_allclose(run(tf.cumsum(t, 1, exclusive=True, reverse=True)),
                               np.cumsum(a[:, ::-1], 1)[:, ::-1] - a)
    b = RNG.standard_normal((6, 2, 3))
    np.testing.assert_allclose(run(tf.tensordot(t, b, 1)), np.tensordot(a, b, 1))
    np.testing.assert_allclose(run(tf.tensordot(t, b, [[1], [0]])), np.tensordot(a, b, 1))
    np.testing.assert_allclose(run(tf.einsum("ij,jkl->ikl", t, b)), np.tensordot(a, b, 1))
    np.testing.assert_allclose(run(tf.diag([1.0, 2.0])), np.diag([1.0, 2.0]))
    y, idx = run(tf.unique(tf.constant([4, 1, 4, 2, 1, 7])))
    np.testing.assert_array_equal(y, [4, 1, 2, 7])  # TF's order: first appearance
    np.testing.assert_array_equal(idx, [0, 1, 0, 2, 1, 3])
    np.testing.assert_array_equal(run(tf.arg_max(t, 1)), a.argmax(1))
    np.testing.assert_array_equal(run(tf.arg_min(t, 0)), a.argmin(0))
    fd_check(lambda x: tf.concat(tf.split(x, [2, 1], 1)[::-1], 1) * tf.tile(x, [1, 1]),
             [RNG.standard_normal((2, 3))])
    fd_check(lambda x: tf.gather(tf.pad(x, [[1, 1], [0, 1]]), [0, 2, 2]),
             [RNG.standard_normal((2, 3))])


def test_control_functions():
    x = tf.placeholder(tf.float64, [3, 2])
    feed = {x: np.arange(6.0).reshape(3, 2)}
    got = run([tf.map_fn(lambda r: r * r, x), tf.scan(lambda acc, r: acc + r, x),
               tf.scan(lambda acc, r: acc * 2 + r, x, initializer=tf.zeros([2], tf.float64),
                       reverse=True),
               tf.foldl(lambda acc, r: acc + r, x), tf.foldr(lambda acc, r: acc - r, x,
                                                             initializer=tf.zeros([2],
                                                                                  tf.float64))],
              feed)
    a = feed[x]
    np.testing.assert_allclose(got[0], a * a)
    np.testing.assert_allclose(got[1], np.cumsum(a, 0))
    np.testing.assert_allclose(got[2][0], a[0] + 2 * (a[1] + 2 * a[2]))
    np.testing.assert_allclose(got[3], a.sum(0))
    np.testing.assert_allclose(got[4], -a.sum(0))
    v = tf.placeholder(tf.float64, [])
    c = tf.case([(v < 0, lambda: v * -1), (v > 10, lambda: v * 0)], default=lambda: v + 1)
    assert [run(c, {v: s}) for s in (-3.0, 20.0, 4.0)] == [3.0, 0.0, 5.0]
    both = tf.case([(v > 0, lambda: v), (v > 1, lambda: v * 2)], default=lambda: v,
                   exclusive=True)
    assert run(both, {v: 0.5}) == 0.5
    with pytest.raises(GraphError, match="2 predicates are true"):
        run(both, {v: 5.0})
    fd_check(lambda x: tf.scan(lambda acc, r: acc * r, x), [RNG.standard_normal((3, 2))])


def test_print_and_device(capsys):
    x = tf.constant([1.0, 2.0])
    y = tf.Print(x * 2, [x], "x = ")
    with tf.device("/cpu:0"), tf.device("/device:GPU:0"), tf.device("/job:worker/task:1"):
        z = y + 1
    op = tf.print("sum:", tf.reduce_sum(x), "of", x, output_stream="stdout")
    np.testing.assert_allclose(run(z), [3.0, 5.0])
    assert "x = [1. 2.]" in capsys.readouterr().err
    run(op)
    assert capsys.readouterr().out == "sum: 3.0 of [1. 2.]\n"  # in the order given
    with pytest.raises(GraphError, match="not a TensorFlow device name"):
        with tf.device("cpu zero"):
            pass


def _log_uniform_reference(weights, biases, labels, inputs, ids, tries, num_classes):
    def q(k):
        p = (np.log(k + 2.0) - np.log(k + 1.0)) / np.log(num_classes + 1.0)
        return -np.expm1(tries * np.log1p(-p))

    true = (weights[labels[:, 0]] * inputs).sum(1) + biases[labels[:, 0]] - np.log(q(labels[:,
                                                                                            0]))
    sampled = inputs @ weights[ids].T + biases[ids] - np.log(q(ids))
    return true, sampled


def _sce(x, z):
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


def test_nce_and_sampled_softmax_losses_match_their_definitions():
    w, b = RNG.standard_normal((12, 4)), RNG.standard_normal(12)
    x, labels = RNG.standard_normal((5, 4)), RNG.integers(0, 12, (5, 1))
    nce = tf.nn.nce_loss(w, b, labels, x, num_sampled=4, num_classes=12)
    ssm = tf.nn.sampled_softmax_loss(w, b, labels, x, num_sampled=4, num_classes=12)
    for loss, kind in ((nce, "nce"), (ssm, "softmax")):
        dj.manual_seed(11)
        drawn = nn_ops._candidates_forward(None, 4, 12, True)  # the op's own draw, replayed
        ids, tries = drawn[:4], drawn[4]
        assert len(set(ids)) == 4 and ids.min() >= 0 and ids.max() < 12
        dj.manual_seed(11)
        got = run(loss)
        true, sampled = _log_uniform_reference(w, b, labels, x, ids, tries, 12)
        if kind == "nce":
            want = _sce(true, 1.0) + _sce(sampled, 0.0).sum(1)
        else:
            sampled = np.where(ids[None, :] == labels, np.finfo(np.float64).min, sampled)
            logits = np.concatenate([true[:, None], sampled], 1)
            m = logits.max(1, keepdims=True)
            want = -(true - (m[:, 0] + np.log(np.exp(logits - m).sum(1))))
        np.testing.assert_allclose(got, want, rtol=1e-10)
