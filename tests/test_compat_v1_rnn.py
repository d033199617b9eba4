"""compat.v1's RNN cells against NumPy written from TF's definitions (one kernel over
[inputs, state]; LSTM gates i, j, f, o; GRU gates r, u then the candidate), TF's variable names,
static_rnn and dynamic_rnn (a while_loop) agreeing, sequence_length, bidirectional runs, and
gradients by finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest
from test_compat_v1_nn_conv import fd_check

import dongjing.compat.v1 as tf
from dongjing.compat.v1.contrib import rnn

RNG = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def lstm_ref(xs, kernel, bias, units, forget_bias=1.0, lengths=None):
    c = h = np.zeros((xs.shape[0], units))
    outs = []
    for t in range(xs.shape[1]):
        z = np.concatenate([xs[:, t], h], 1) @ kernel + bias
        i, j, f, o = np.split(z, 4, 1)
        nc = c * sigmoid(f + forget_bias) + sigmoid(i) * np.tanh(j)
        nh = np.tanh(nc) * sigmoid(o)
        alive = np.ones((len(xs), 1), bool) if lengths is None else (t < lengths)[:, None]
        c, h = np.where(alive, nc, c), np.where(alive, nh, h)
        outs.append(np.where(alive, nh, 0.0))
    return np.stack(outs, 1), (c, h)


def gru_ref(xs, gk, gb, ck, cb, units):
    h = np.zeros((xs.shape[0], units))
    outs = []
    for t in range(xs.shape[1]):
        r, u = np.split(sigmoid(np.concatenate([xs[:, t], h], 1) @ gk + gb), 2, 1)
        c = np.tanh(np.concatenate([xs[:, t], r * h], 1) @ ck + cb)
        h = u * h + (1 - u) * c
        outs.append(h)
    return np.stack(outs, 1), h


def _values(sess, cell):
    return {v.var_name: sess.run(v) for v in cell.variables}


def test_basic_lstm_cell_static_and_dynamic_match_the_definition():
    xs = RNG.standard_normal((3, 4, 2))
    lengths = np.array([4, 2, 1])
    x = tf.placeholder(tf.float64, [None, 4, 2])
    seq = tf.placeholder(tf.int32, [None])
    cell = rnn.BasicLSTMCell(5, forget_bias=0.5)
    dyn, dyn_state = tf.nn.dynamic_rnn(cell, x, sequence_length=seq, dtype=tf.float64)
    outs, state = rnn.static_rnn(cell, tf.unstack(x, 4, 1), sequence_length=seq,
                                 dtype=tf.float64)
    assert [v.var_name for v in cell.variables] == ["rnn/basic_lstm_cell/kernel",
                                                    "rnn/basic_lstm_cell/bias"]
    assert cell.variables[0].shape == (7, 20)
    for level in (0, 2):
        with tf.Session() as sess:
            sess.optimize = level
            sess.run(tf.global_variables_initializer())
            v = _values(sess, cell)
            got = sess.run([dyn, dyn_state, tf.stack(outs, 1), state], {x: xs, seq: lengths})
        want, (c, h) = lstm_ref(xs, v["rnn/basic_lstm_cell/kernel"],
                                v["rnn/basic_lstm_cell/bias"], 5, 0.5, lengths)
        for out, st in ((got[0], got[1]), (got[2], got[3])):
            np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(st.c, c, rtol=1e-10)
            np.testing.assert_allclose(st.h, h, rtol=1e-10)


def test_gru_and_basic_rnn_cells_match_the_definition():
    xs = RNG.standard_normal((2, 3, 4))
    x = tf.constant(xs)
    gru = tf.nn.rnn_cell.GRUCell(3)
    out, last = tf.nn.dynamic_rnn(gru, x, dtype=tf.float64, time_major=False)
    basic = tf.nn.rnn_cell.BasicRNNCell(2)
    out_b, last_b = tf.nn.dynamic_rnn(basic, tf.transpose(x, [1, 0, 2]), dtype=tf.float64,
                                      time_major=True, scope="other")
    assert [v.var_name for v in gru.variables] == [
        "rnn/gru_cell/gates/kernel", "rnn/gru_cell/gates/bias", "rnn/gru_cell/candidate/kernel",
        "rnn/gru_cell/candidate/bias"]
    assert [v.var_name for v in basic.variables] == ["other/basic_rnn_cell/kernel",
                                                     "other/basic_rnn_cell/bias"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        v, vb = _values(sess, gru), _values(sess, basic)
        got, got_last, got_b, got_last_b = sess.run([out, last, out_b, last_b])
    np.testing.assert_allclose(v["rnn/gru_cell/gates/bias"], 1.0)  # TF's GRU gate bias
    want, h = gru_ref(xs, *(v[f"rnn/gru_cell/{n}"] for n in ("gates/kernel", "gates/bias",
                                                             "candidate/kernel",
                                                             "candidate/bias")), 3)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    np.testing.assert_allclose(got_last, h, rtol=1e-10)
    hb = np.zeros((2, 2))
    for t in range(3):
        hb = np.tanh(np.concatenate([xs[:, t], hb], 1) @ vb["other/basic_rnn_cell/kernel"]
                     + vb["other/basic_rnn_cell/bias"])
        np.testing.assert_allclose(got_b[t], hb, rtol=1e-10)
    np.testing.assert_allclose(got_last_b, hb, rtol=1e-10)


def test_multi_rnn_cell_lstm_cell_options_and_dropout_wrapper():
    x = tf.placeholder(tf.float32, [None, 5, 3])
    cells = [tf.nn.rnn_cell.LSTMCell(4, use_peepholes=True, num_proj=2, cell_clip=1.0),
             tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicLSTMCell(3),
                                           output_keep_prob=1.0)]
    stack = tf.nn.rnn_cell.MultiRNNCell(cells)
    out, states = tf.nn.dynamic_rnn(stack, x, dtype=tf.float32)
    assert out.shape == (None, 5, 3)
    assert [v.var_name for v in stack.variables] == [
        "rnn/multi_rnn_cell/cell_0/lstm_cell/kernel", "rnn/multi_rnn_cell/cell_0/lstm_cell/bias",
        "rnn/multi_rnn_cell/cell_0/lstm_cell/w_f_diag",
        "rnn/multi_rnn_cell/cell_0/lstm_cell/w_i_diag",
        "rnn/multi_rnn_cell/cell_0/lstm_cell/w_o_diag",
        "rnn/multi_rnn_cell/cell_0/lstm_cell/projection/kernel",
        "rnn/multi_rnn_cell/cell_1/basic_lstm_cell/kernel",
        "rnn/multi_rnn_cell/cell_1/basic_lstm_cell/bias"]
    assert stack.variables[0].shape == (3 + 2, 16)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, (s0, s1) = sess.run([out, states], {x: RNG.standard_normal((2, 5, 3))})
    assert np.abs(s0.c).max() <= 1.0 and s0.h.shape == (2, 2) and s1.h.shape == (2, 3)
    np.testing.assert_allclose(got[:, -1], s1.h)


def test_bidirectional_runs_reverse_each_sequence_within_its_length():
    xs = RNG.standard_normal((2, 4, 2))
    lengths = np.array([4, 2])
    x = tf.constant(xs)
    fw, bw = rnn.BasicLSTMCell(3), rnn.BasicLSTMCell(3)
    (out_fw, out_bw), _ = tf.nn.bidirectional_dynamic_rnn(fw, bw, x, sequence_length=lengths,
                                                          dtype=tf.float64)
    static_out, _, _ = rnn.static_bidirectional_rnn(fw, bw, tf.unstack(x, 4, 1),
                                                    dtype=tf.float64, sequence_length=lengths)
    assert [v.var_name for v in bw.variables] == ["bidirectional_rnn/bw/basic_lstm_cell/kernel",
                                                  "bidirectional_rnn/bw/basic_lstm_cell/bias"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        vb = _values(sess, bw)
        got_fw, got_bw, got_static = sess.run([out_fw, out_bw, tf.stack(static_out, 1)])
    kernel, bias = (vb[f"bidirectional_rnn/bw/basic_lstm_cell/{n}"] for n in ("kernel", "bias"))
    for b, n in enumerate(lengths):
        reversed_run, _ = lstm_ref(xs[b:b + 1, :n][:, ::-1], kernel, bias, 3)
        np.testing.assert_allclose(got_bw[b, :n], reversed_run[0, ::-1], rtol=1e-10)
        np.testing.assert_allclose(got_bw[b, n:], 0.0)
    np.testing.assert_allclose(got_static, np.concatenate([got_fw, got_bw], 2), rtol=1e-10)


def test_dynamic_rnn_gradients_through_the_while_loop():
    tf.reset_default_graph()
    kernel0 = RNG.standard_normal((5, 12)) * 0.5

    def run_lstm(x, kernel):
        cell = tf.nn.rnn_cell.BasicLSTMCell(3)
        cell._variables["kernel"] = kernel  # a fed kernel: the gradient reaches it
        cell._variables["bias"] = tf.zeros([12], tf.float64)
        out, state = tf.nn.dynamic_rnn(cell, x, sequence_length=[3, 1], dtype=tf.float64)
        return out + tf.expand_dims(state.c, 1)

    fd_check(run_lstm, [RNG.standard_normal((2, 3, 2)), kernel0])
