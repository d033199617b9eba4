"""compat.v1's tf.layers (names, initializers, batch normalization's moving averages and its
update ops) and tf.losses (weights, reductions) against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from test_compat_v1_nn_conv import conv_ref, fd_check

import dongjing as dj
import dongjing.compat.v1 as tf

RNG = np.random.default_rng(9)


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def test_layers_name_their_variables_and_compute_the_definition():
    x = tf.placeholder(tf.float64, [None, 6, 6, 2])
    h = tf.layers.conv2d(x, 3, 3, strides=2, padding="same", activation=tf.nn.relu)
    p = tf.layers.max_pooling2d(h, 2, 1)
    a = tf.layers.average_pooling2d(h, 2, 2, padding="same")
    f = tf.layers.flatten(p)
    d = tf.layers.dense(f, 4, activation=tf.nn.tanh)
    d2 = tf.layers.dense(d, 2, use_bias=False, name="logits")
    names = [v.var_name for v in tf.global_variables()]
    assert names == ["conv2d/kernel", "conv2d/bias", "dense/kernel", "dense/bias",
                     "logits/kernel"]
    assert tf.layers.dense(d, 1).shape == (None, 1)
    assert tf.global_variables()[-2].var_name == "dense_1/kernel"
    xs = RNG.standard_normal((2, 6, 6, 2))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        k, b, dk, db, lk = sess.run(tf.global_variables()[:5])
        got_h, got_a, got_d2 = sess.run([h, a, d2], {x: xs})
    limit = np.sqrt(6 / (3 * 3 * 2 + 3 * 3 * 3))  # glorot_uniform over the receptive field
    assert np.abs(k).max() <= limit and np.abs(k).max() > 0.5 * limit and not b.any()
    want_h = np.maximum(conv_ref(xs, k, (2, 2), "SAME") + b, 0)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-10)
    pooled = np.maximum(np.maximum(want_h[:, :-1, :-1], want_h[:, 1:, :-1]),
                        np.maximum(want_h[:, :-1, 1:], want_h[:, 1:, 1:]))
    want_d2 = np.tanh(pooled.reshape(2, -1) @ dk + db) @ lk
    np.testing.assert_allclose(got_d2, want_d2, rtol=1e-10)
    assert got_a.shape == (2, 2, 2, 3)


def test_batch_normalization_trains_on_the_batch_and_moves_its_averages():
    x = tf.placeholder(tf.float64, [None, 3])
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(x, momentum=0.9, training=training)
    updates = tf.layers.get_update_ops()
    assert len(updates) == 2
    xs = RNG.standard_normal((8, 3)) * 2 + 1
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_train = sess.run(y, {x: xs, training: True})
        sess.run(updates, {x: xs, training: True})
        mean, var = sess.run(tf.global_variables()[2:4])
        got_test = sess.run(y, {x: xs, training: False})
        sess.run(updates, {x: xs, training: False})  # inference runs leave them
        assert np.allclose(sess.run(tf.global_variables()[2]), mean)
    np.testing.assert_allclose(got_train, (xs - xs.mean(0)) / np.sqrt(xs.var(0) + 1e-3))
    np.testing.assert_allclose(mean, 0.1 * xs.mean(0))
    np.testing.assert_allclose(var, 0.9 + 0.1 * xs.var(0))  # (TF's 2-d, non-fused path)
    np.testing.assert_allclose(got_test, (xs - mean) / np.sqrt(var + 1e-3))
    assert [v.var_name for v in tf.trainable_variables()] == ["batch_normalization/gamma",
                                                             "batch_normalization/beta"]


def test_batch_normalization_of_images_moves_toward_the_unbiased_variance():
    """TF's default for 4-d inputs is its fused kernel, whose update uses n / (n - 1)."""
    x = tf.placeholder(tf.float64, [None, 2, 2, 3])
    tf.layers.batch_normalization(x, momentum=0.5, training=True)
    xs = RNG.standard_normal((3, 2, 2, 3))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.layers.get_update_ops(), {x: xs})
        var = sess.run(tf.global_variables()[3])
    np.testing.assert_allclose(var, 0.5 + 0.5 * xs.reshape(-1, 3).var(0, ddof=1))


def test_layers_dropout_follows_training():
    x = tf.ones([100, 100])
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.dropout(x, rate=0.25, training=training)
    dj.manual_seed(1)
    with tf.Session() as sess:
        on, off = sess.run(y, {training: True}), sess.run(y, {training: False})
    assert set(np.unique(on)) == {0.0, np.float32(1 / 0.75)} and abs((on == 0).mean() - .25) < .03
    np.testing.assert_array_equal(off, 1.0)
    assert tf.layers.dropout(x, 0.5) is not None


@pytest.mark.parametrize("reduction", ["none", "weighted_sum", "weighted_mean",
                                       "weighted_sum_over_batch_size",
                                       "weighted_sum_by_nonzero_weights"])
def test_losses_weights_and_reductions(reduction):
    labels = RNG.standard_normal((4, 3))
    preds = RNG.standard_normal((4, 3))
    weights = np.array([[1.0], [0.0], [2.0], [0.5]])
    err = preds - labels

    def reduce(per):
        w = np.broadcast_to(weights, per.shape)
        total = (per * w).sum()
        return {"none": per * w, "weighted_sum": total, "weighted_mean": total / w.sum(),
                "weighted_sum_over_batch_size": total / per.size,
                "weighted_sum_by_nonzero_weights": total / (w != 0).sum()}[reduction]

    huber = np.where(np.abs(err) <= 0.5, 0.5 * err ** 2, 0.5 * (np.abs(err) - 0.25))
    probs = 1 / (1 + np.exp(-preds))
    z = (labels > 0).astype(float)
    cases = [
        (tf.losses.mean_squared_error(labels, preds, weights, reduction=reduction), err ** 2),
        (tf.losses.absolute_difference(labels, preds, weights, reduction=reduction),
         np.abs(err)),
        (tf.losses.huber_loss(labels, preds, weights, delta=0.5, reduction=reduction), huber),
        (tf.losses.log_loss(z, probs, weights, reduction=reduction),
         -(z * np.log(probs + 1e-7) + (1 - z) * np.log(1 - probs + 1e-7))),
        (tf.losses.sigmoid_cross_entropy(z, preds, weights, reduction=reduction),
         np.maximum(preds, 0) - preds * z + np.log1p(np.exp(-np.abs(preds)))),
    ]
    with tf.Session() as sess:
        for loss, per in cases:
            np.testing.assert_allclose(sess.run(loss), reduce(per), rtol=1e-10)


def test_softmax_losses():
    logits = RNG.standard_normal((4, 5))
    classes = np.array([0, 3, 4, 1])
    onehot = np.eye(5)[classes]
    log_p = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    per = -log_p[np.arange(4), classes]
    w = np.array([1.0, 2.0, 0.0, 1.0])
    with tf.Session() as sess:
        got = sess.run([tf.losses.softmax_cross_entropy(onehot, logits),
                        tf.losses.sparse_softmax_cross_entropy(classes, logits, weights=w),
                        tf.losses.softmax_cross_entropy(onehot, logits, label_smoothing=0.1)])
    np.testing.assert_allclose(got[0], per.mean())
    np.testing.assert_allclose(got[1], (per * w).sum() / 3)
    smooth = onehot * 0.9 + 0.1 / 5
    np.testing.assert_allclose(got[2], -(smooth * log_p).sum(1).mean())
    fd_check(lambda lg: tf.losses.sparse_softmax_cross_entropy(classes, lg, weights=w),
             [logits])
    fd_check(lambda p: tf.losses.huber_loss(np.zeros((2, 3)), p, reduction="none"),
             [RNG.standard_normal((2, 3)) * 2])
