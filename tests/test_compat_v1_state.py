"""TF 1.x's state semantics in dongjing.compat.v1, probed exactly as TensorFlow was
(tests/programs/tf1_probes.py; TensorFlow's answers in tests/programs/fixtures/tf1_probes.json,
made by tools/tf1_reference.py): per-Session variables and optimizer slots, initial values from
other variables, seeds, assignments' values, scopes, initializers, optimizers, decays."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import dongjing as dj
import dongjing.compat.v1 as tf

PROGRAMS = Path(__file__).parent / "programs"
sys.path.insert(0, str(PROGRAMS))
import tf1_probes  # noqa: E402

sys.path.remove(str(PROGRAMS))

FIXTURE = json.loads((PROGRAMS / "fixtures" / "tf1_probes.json").read_text())
TF = FIXTURE["probes"]


@pytest.fixture(autouse=True, params=[0, 2], ids=["O0", "O2"])
def fresh_graph(request):
    tf.reset_default_graph()
    tf.set_session_optimize(request.param)
    yield
    tf.set_session_optimize(2)
    tf.reset_default_graph()


def test_fixture_says_which_tensorflow_made_it():
    assert FIXTURE["made_by"]["tensorflow"].startswith("2.")


@pytest.mark.parametrize("name", ["two_sessions", "optimizer_state_per_session",
                                  "variable_from_variable", "seeds", "assign_fetch",
                                  "uninitialized_read", "scopes", "clipping"])
def test_probe_answers_as_tensorflow(name):
    got = tf1_probes.PROBES[name](tf)
    expected = TF[name]
    if name in ("optimizer_state_per_session", "clipping"):
        np.testing.assert_allclose(_flat(got), _flat(expected), rtol=2e-5, atol=1e-6)
    else:
        assert json.loads(json.dumps(got)) == expected


def test_decays_match_tensorflow():
    got = tf1_probes.decays(tf)
    for key, values in TF["decays"].items():
        np.testing.assert_allclose(got[key], values, rtol=1e-6, err_msg=key)


def test_initializers_match_tensorflow_statistics():
    got = tf1_probes.initializers(tf)
    for key, (mean, std, lo, hi) in TF["initializers"].items():
        g_mean, g_std, g_lo, g_hi = got[key]
        assert g_mean == pytest.approx(mean, abs=0.01), key
        assert g_std == pytest.approx(std, rel=0.03, abs=1e-7), key
        assert (g_lo >= lo - 0.05 * (abs(lo) + 1e-3)) and (g_hi <= hi + 0.05 * (abs(hi) + 1e-3))
        if std > 0:  # the bounds (uniform limits, truncation at two stddevs) are reached
            assert g_lo == pytest.approx(lo, abs=0.05 * (hi - lo)), key
            assert g_hi == pytest.approx(hi, abs=0.05 * (hi - lo)), key


@pytest.mark.parametrize("which", list(tf1_probes.OPTIMIZERS))
def test_optimizer_steps_match_tensorflow(which):
    got = tf1_probes.optimizer_trajectory(tf, which)
    np.testing.assert_allclose(_flat(got), _flat(TF[f"optimizer_{which}"]), rtol=2e-5,
                               atol=1e-5)


def test_dj_session_keeps_shared_state_while_tf_sessions_own_theirs():
    w = tf.Variable(10)
    step = w.assign_add(1)
    with tf.Session() as sess:
        sess.run(w.initializer)
        sess.run(step)
        assert sess.run(w) == 11
    shared = dj.Session(tf.get_default_graph())
    shared.run(w.initializer.tensor)  # a tf op's graph node
    shared.run(step.tensor)
    assert dj.Session(tf.get_default_graph()).run(w) == 11  # one value for every dj.Session
    with tf.Session() as sess:  # a new tf.Session starts uninitialized
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value"):
            sess.run(step)


def test_saver_restores_into_another_session(tmp_path):
    w = tf.Variable([1.0, 2.0], name="w")
    n = tf.Variable(0, name="counter", trainable=False)
    train = tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(w * w))
    saver = tf.train.Saver(max_to_keep=2)
    later = tf.Variable(5.0, name="later")  # made after the Saver: not saved, as in TF
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run([train, n.assign_add(1)])
            path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=n)
        kept = sess.run(w)
        slots = sess.run(tf.global_variables()[:-1])
    assert path.endswith("model.ckpt-3") and tf.train.latest_checkpoint(str(tmp_path)) == path
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.all_model_checkpoint_paths == [str(tmp_path / "model.ckpt-2"), path]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "checkpoint", "model.ckpt-2.safetensors", "model.ckpt-3.safetensors"]
    with tf.Session() as sess:
        saver.restore(sess, path)  # restoring initializes
        with pytest.raises(tf.errors.FailedPreconditionError, match="later"):
            sess.run(later)
        np.testing.assert_array_equal(sess.run(w), kept)
        for a, b in zip(sess.run(tf.global_variables()[:-1]), slots):
            np.testing.assert_array_equal(a, b)
        sess.run(train)  # Adam continues from the restored slots
    with tf.Session() as sess, pytest.raises(tf.errors.NotFoundError):
        tf.train.Saver({"missing": w}).restore(sess, path)
    with pytest.raises(tf.errors.NotFoundError):
        saver.restore(tf.Session(), str(tmp_path / "nothing"))


def test_summaries_write_tensorboard_event_files(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing import event_accumulator

    x = tf.placeholder(tf.float32, [None])
    with tf.name_scope("model"):
        w = tf.Variable(2.0, name="w")
        loss = tf.reduce_mean(tf.square(x * w - 1.0))
    tf.summary.scalar("loss", loss)
    tf.summary.histogram("w", w)
    merged = tf.summary.merge_all()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        writer = tf.summary.FileWriter(str(tmp_path), sess.graph)
        losses = []
        for step in range(3):
            summary, value, _ = sess.run([merged, loss, train], {x: [1.0, 2.0]})
            assert isinstance(summary, bytes)
            writer.add_summary(summary, step)
            losses.append(value)
        writer.close()
    events = event_accumulator.EventAccumulator(str(tmp_path))
    events.Reload()
    assert events.Tags()["scalars"] == ["loss"] and events.Tags()["histograms"] == ["w"]
    np.testing.assert_allclose([e.value for e in events.Scalars("loss")], losses, rtol=1e-6)
    assert [e.step for e in events.Scalars("loss")] == [0, 1, 2]
    names = {node.name for node in events.Graph().node}
    assert "model/w" in names and any(n.startswith("model/") for n in names - {"model/w"})


def test_config_protos_are_accepted():
    config = tf.ConfigProto(allow_soft_placement=True,
                            gpu_options=tf.GPUOptions(allow_growth=True),
                            intra_op_parallelism_threads=2)
    assert config.gpu_options.allow_growth
    with tf.Session(config=config) as sess:
        assert sess.run(tf.constant(3.0) * 2) == 6.0


def test_collections_and_regularizers():
    with tf.variable_scope("net", regularizer=lambda v: tf.reduce_sum(v * v),
                           initializer=tf.constant_initializer(0.5)):
        w = tf.get_variable("w", [2])
    tf.add_to_collection("mine", w)
    assert tf.get_collection("mine") == [w]
    assert tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope="net") == [w]
    (reg,) = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(w).tolist() == [0.5, 0.5] and sess.run(reg) == 0.5


def _flat(value) -> list:
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _flat(value[k])]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    return [float(value)]
