"""compat.v1's names, scopes, collections, initializers and optimizer slots, in the detail TF1
code relies on (the cross-checks with TensorFlow itself are in test_compat_v1_state.py)."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def test_name_scopes_prefix_nodes_and_variables():
    x = tf.placeholder(tf.float32, [2], name="x")
    with tf.name_scope("Loss") as scope:
        y = x * 2.0
        v = tf.Variable(1.0, name="v")
        with tf.name_scope("inner"):
            z = y + 1.0
    with tf.name_scope("Loss") as again:
        w = tf.Variable(1.0, name="v")
    assert scope == "Loss/" and again == "Loss_1/"
    assert y.name.startswith("Loss/") and z.name.startswith("Loss/inner/")
    assert (v.name, w.name, v.op.name) == ("Loss/v:0", "Loss_1/v:0", "Loss/v")
    assert tf.Variable(0.0).name == "Variable:0" and tf.Variable(0.0).name == "Variable_1:0"


def test_get_variable_shares_only_when_asked():
    with tf.variable_scope("net") as scope:
        w = tf.get_variable("w", [3], initializer=tf.ones_initializer())
        scope.reuse_variables()
        assert tf.get_variable("w") is w
    with tf.variable_scope(scope, reuse=True):  # re-entering by object
        assert tf.get_variable("w", [3]) is w
        with tf.variable_scope("inner"):  # reuse is inherited
            with pytest.raises(ValueError, match="net/inner/u does not exist"):
                tf.get_variable("u", [1])
    with tf.variable_scope("net"), pytest.raises(ValueError, match="already exists"):
        tf.get_variable("w", [3])
    with tf.variable_scope("net", reuse=True), pytest.raises(ValueError, match="shape"):
        tf.get_variable("w", [4])
    with pytest.raises(ValueError, match="do not specify a shape"):
        tf.get_variable("c", [2], initializer=tf.constant([1.0, 2.0]))
    with pytest.raises(tf.NotProvidedError, match="partitioner"):
        tf.get_variable("p", [2], partitioner=object())
    i = tf.get_variable("i", [2], dtype=tf.int32)
    assert i.dtype == np.int32
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(w).tolist() == [1.0, 1.0, 1.0]
        assert sess.run(i).tolist() == [0, 0]  # integers start at zero
        with tf.variable_scope(tf.get_variable_scope(), reuse=True):
            assert tf.get_variable("i") is i


def test_initializer_classes_and_functions():
    for init in (tf.initializers.zeros(), tf.zeros_initializer(), tf.initializers.constant(2.0),
                 tf.initializers.glorot_uniform(seed=3), tf.initializers.he_normal(seed=3),
                 tf.initializers.lecun_uniform(seed=3), tf.initializers.variance_scaling()):
        value = init([4, 5])
        assert value.shape == (4, 5) and value.dtype == np.float32
    with pytest.raises(ValueError, match="mode"):
        tf.variance_scaling_initializer(mode="fan_sideways")
    with pytest.raises(ValueError, match="do not fill"):
        tf.constant_initializer([1.0, 2.0, 3.0])([2, 2])
    v = tf.get_variable("v", [2, 2], initializer=tf.constant_initializer([1, 2, 3, 4]))
    g = tf.get_variable("g", [300, 200], initializer=tf.glorot_uniform_initializer(seed=1))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(v).tolist() == [[1, 2], [3, 4]]
        limit = np.sqrt(6.0 / 500)
        values = sess.run(g)
        assert values.min() >= -limit and values.max() <= limit and values.std() > limit / 2


def test_collections_follow_the_graph():
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(2.0, name="b", trainable=False, collections=[tf.GraphKeys.LOCAL_VARIABLES])
    assert tf.global_variables() == [a] and tf.local_variables() == [b]
    tf.add_to_collections(["x", "y"], a)
    assert tf.get_collection("x") == [a] and tf.get_collection_ref("y") == [a]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(b) == 2.0 and not sess.run(tf.is_variable_initialized(a))
    g = tf.Graph()
    with g.as_default():
        assert tf.get_collection("x") == [] and tf.global_variables() == []


def test_optimizer_slots_are_variables_named_as_tf():
    w = tf.Variable([1.0, 2.0], name="w")
    opt = tf.train.AdamOptimizer(0.1)
    opt.minimize(tf.reduce_sum(w * w))
    names = [v.name for v in tf.global_variables()]
    assert names == ["w:0", "beta1_power:0", "beta2_power:0", "w/Adam:0", "w/Adam_1:0"]
    assert opt.get_slot(w, "m").name == "w/Adam:0" and opt.get_slot_names() == ["m", "v"]
    assert tf.trainable_variables() == [w]


def test_initial_values_from_placeholders_and_other_variables():
    p = tf.placeholder(tf.float32, [2])
    a = tf.Variable(p * 2.0)
    b = tf.Variable(a + 1.0)  # guarded: a's initial value when a is not initialized yet
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer(), {p: [1.0, 2.0]})
        assert sess.run([a, b]) == [pytest.approx([2.0, 4.0]), pytest.approx([3.0, 5.0])]
        sess.run(a.assign([10.0, 10.0]))
        sess.run(b.initializer, {p: [0.0, 0.0]})  # a is initialized now: its value counts
        assert sess.run(b).tolist() == [11.0, 11.0]
    with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value"):
        with tf.Session() as sess:
            sess.run(a + 1.0)


def test_seeded_streams_start_over_in_every_session():
    tf.set_random_seed(5)
    r = tf.random_uniform([4])
    s = tf.random_normal([4], seed=1)
    w = tf.Variable(tf.truncated_normal([3]))
    runs = []
    for _ in range(2):
        with tf.Session() as sess:
            sess.run(w.initializer)
            runs.append([sess.run(r), sess.run(r), sess.run(s), sess.run(w)])
    for first, second in zip(*runs):
        np.testing.assert_array_equal(first, second)
    assert not np.array_equal(runs[0][0], runs[0][1])  # a fresh draw every run
    assert tf.get_seed(None)[0] == 5 and tf.get_seed(3) == (5, 3)
