"""compat.v1's determinant and inverse (with gradients by finite differences), tf.where's index
form, fill/zeros/ones to shapes read at run time, placeholder_with_default and py_func."""

from __future__ import annotations

import numpy as np
import pytest
from test_compat_v1_nn_conv import fd_check

import dongjing.compat.v1 as tf
from dongjing.errors import DTypeError, FeedError, GraphError, ShapeError

RNG = np.random.default_rng(4)


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def test_determinant_and_inverse():
    a = RNG.standard_normal((2, 3, 3)) + 2 * np.eye(3)
    with tf.Session() as sess:
        det, inv, inv_t = sess.run([tf.matrix_determinant(a), tf.matrix_inverse(a),
                                    tf.matrix_inverse(a, adjoint=True)])
    np.testing.assert_allclose(det, np.linalg.det(a))
    np.testing.assert_allclose(inv, np.linalg.inv(a))
    np.testing.assert_allclose(inv_t, np.linalg.inv(a.transpose(0, 2, 1)))
    fd_check(tf.matrix_determinant, [a])
    fd_check(lambda m: tf.matrix_inverse(m) * tf.expand_dims(tf.expand_dims(
        tf.matrix_determinant(m), -1), -1), [a[0]])
    x = tf.placeholder(tf.float64, [3, 3])
    second = tf.gradients(tf.gradients(tf.matrix_determinant(x), x)[0][0, 1], x)[0]
    with tf.Session() as sess:
        got = sess.run(second, {x: a[0]})
    eps, base = 1e-6, a[0]
    numeric = np.zeros((3, 3))
    for i, j in np.ndindex(3, 3):
        p, m = base.copy(), base.copy()
        p[i, j] += eps
        m[i, j] -= eps
        grad = [np.linalg.det(q) * np.linalg.inv(q).T for q in (p, m)]
        numeric[i, j] = (grad[0][0, 1] - grad[1][0, 1]) / (2 * eps)
    np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-8)
    with pytest.raises(ShapeError, match="square"):
        tf.matrix_determinant(tf.zeros([2, 3]))


def test_where_indices_and_fills_of_run_time_shapes():
    x = tf.placeholder(tf.float64, [None, 3])
    n = tf.shape(x)[0]
    fetch = [tf.where(x > 0), tf.zeros([n, 2]), tf.ones(tf.shape(x), tf.int32),
             tf.fill([n, 2], tf.reduce_sum(x)), tf.fill([2, 2], tf.constant(1.5))]
    assert [tuple(t.shape) for t in fetch] == [(None, 2), (None, 2), (None, 3), (None, 2),
                                               (2, 2)]
    xs = np.array([[1.0, -1, 2], [0, 3, -4]])
    with tf.Session() as sess:
        w, z, o, f, c = sess.run(fetch, {x: xs})
    np.testing.assert_array_equal(w, np.argwhere(xs > 0))
    assert z.shape == (2, 2) and not z.any() and o.dtype == np.int32 and (o == 1).all()
    np.testing.assert_allclose(f, np.full((2, 2), xs.sum()))
    np.testing.assert_allclose(c, 1.5)
    fd_check(lambda v: tf.fill(tf.shape(v), tf.reduce_sum(v * v)), [RNG.standard_normal((2, 2))])
    with pytest.raises(ShapeError, match="give both x and y"):
        tf.where(x > 0, x)


def test_placeholder_with_default():
    d = tf.placeholder_with_default(tf.constant([[1.0, 2.0]]), [None, 2])
    y = d * 3
    assert d.shape == (None, 2)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y), [[3.0, 6.0]])
        np.testing.assert_allclose(sess.run(y, {d: np.ones((3, 2), np.float32)}), 3.0)
        with pytest.raises(FeedError):
            sess.run(y, {d: np.ones((3, 4), np.float32)})
    with pytest.raises(ShapeError, match="does not fit"):
        tf.placeholder_with_default(tf.constant([1.0, 2.0]), [3])


def test_py_func_runs_python_once_per_run():
    calls = []

    def sort_rows(a):
        calls.append(a.shape)
        return np.sort(a, 1), np.int64(a.shape[0])

    x = tf.placeholder(tf.float32, [None, 3])
    rows, count = tf.py_func(sort_rows, [x], [tf.float32, tf.int64])
    doubled = tf.py_func(lambda a: a * 2, [x], tf.float32)
    assert rows.shape == (None, None) and count.shape == ()
    xs = np.array([[3.0, 1, 2], [0, -1, 5]], np.float32)
    with tf.Session() as sess:
        got = sess.run([rows, count, doubled, rows + 1], {x: xs})
        assert len(calls) == 2  # one call when built (the results' ranks), one in the run
        np.testing.assert_allclose(got[0], np.sort(xs, 1))
        assert got[1] == 2
        np.testing.assert_allclose(got[2], xs * 2)
        wrong = tf.py_func(lambda a: a.astype(np.int32), [x], tf.float32)
        with pytest.raises(DTypeError, match="Tout"):
            sess.run(wrong, {x: xs})
    with pytest.raises(GraphError, match="failed"):
        tf.py_func(lambda a: a[5], [x], tf.float32)


def test_tile_and_slice_by_amounts_read_at_run_time():
    x = tf.placeholder(tf.float64, [None, 3])
    n = tf.shape(x)[0]
    tiled = tf.tile(x, tf.stack([2, n]))
    last_row = tf.slice(x, tf.stack([n - 1, 0]), [1, -1])
    assert last_row.shape == (1, None)
    xs = RNG.standard_normal((2, 3))
    with tf.Session() as sess:
        got_t, got_s = sess.run([tiled, last_row], {x: xs})
        with pytest.raises(ShapeError, match="do not fit"):
            sess.run(tf.slice(x, tf.stack([n, 0]), [1, -1]), {x: xs})
    np.testing.assert_allclose(got_t, np.tile(xs, (2, 2)))
    np.testing.assert_allclose(got_s, xs[1:])
    fd_check(lambda v: tf.tile(v, tf.shape(v)) * tf.tile(v, tf.shape(v)), [xs[:, :2]])
    fd_check(lambda v: tf.slice(v * v, tf.stack([tf.shape(v)[0] - 1, 1]), [1, 2]), [xs])
