"""compat.v1's tf.data: datasets over NumPy arrays and the iterators that feed a graph one
element per run (all components of one element together), with TF's end-of-data error."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.compat.v1 as tf
from dongjing.errors import GraphError, IndexOutOfRangeError


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def _drain(sess, fetch) -> list:
    out = []
    while True:
        try:
            out.append(sess.run(fetch))
        except IndexOutOfRangeError:
            return out


def test_slices_map_batch_and_the_end_of_the_data():
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    y = np.arange(5)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).map(lambda a, b: (a * 2, b + 1)).batch(2)
    assert ds.output_shapes == ((None, 2), (None,))
    xs, ys = ds.make_one_shot_iterator().get_next()
    assert xs.shape == (None, 2) and ys.dtype == np.int64
    with tf.Session() as sess:
        batches = _drain(sess, [xs, ys, tf.reduce_sum(xs)])
    assert [b[1].tolist() for b in batches] == [[1, 2], [3, 4], [5]]
    np.testing.assert_allclose(np.concatenate([b[0] for b in batches]), x * 2)
    assert [float(b[2]) for b in batches] == [float((b[0]).sum()) for b in batches]


def test_shuffle_repeat_and_reinitializing():
    ds = tf.data.Dataset.range(6).shuffle(4, seed=3).repeat(2)
    it = ds.make_initializable_iterator()
    value = it.get_next()
    with tf.Session() as sess:
        with pytest.raises(GraphError, match="not initialized"):
            sess.run(value)
        sess.run(it.initializer)
        first = [int(v) for v in _drain(sess, value)]
        sess.run(it.initializer)
        again = [int(v) for v in _drain(sess, value)]
    assert sorted(first[:6]) == sorted(first[6:]) == list(range(6))
    assert first[:6] != first[6:]  # each pass is shuffled anew
    assert first == again  # a seeded shuffle starts its stream over with the iterator


def test_a_training_loop_fed_by_a_dataset_and_take_skip():
    rng = np.random.default_rng(0)
    features = rng.standard_normal((64, 3)).astype(np.float32)
    targets = features @ np.array([1.0, -2.0, 0.5], np.float32)
    ds = tf.data.Dataset.from_tensor_slices({"x": features, "y": targets})
    batch = ds.skip(0).take(64).repeat().batch(16).prefetch(1).make_one_shot_iterator() \
        .get_next()
    w = tf.Variable(tf.zeros([3]))
    loss = tf.reduce_mean(tf.square(tf.reduce_sum(batch["x"] * w, 1) - batch["y"]))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    dj.manual_seed(0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(200):
            sess.run(train)
        np.testing.assert_allclose(sess.run(w), [1.0, -2.0, 0.5], atol=1e-3)
    assert len(list(tf.data.Dataset.range(5).skip(2).take(2)._make({}))) == 2


def test_bad_datasets_say_why():
    with pytest.raises(GraphError, match="same first dim"):
        tf.data.Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))
    with pytest.raises(GraphError, match="batch_size"):
        tf.data.Dataset.range(3).batch(0)
