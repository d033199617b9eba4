"""compat.v1's convolutions and pooling against direct NumPy definitions (TF's SAME padding puts
the odd pixel after; avg_pool's SAME windows count only real pixels), NHWC and NCHW, and their
gradients against finite differences in float64 (through tf.gradients), at optimize 0 and 2."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing.compat.v1 as tf
from dongjing.errors import GraphError, ShapeError

RNG = np.random.default_rng(7)


def _same(size, k, s):
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def _pad_nhwc(x, kh, kw, s, padding, value=0.0):
    if padding == "VALID":
        return x
    (t, b), (l, r) = _same(x.shape[1], kh, s[0]), _same(x.shape[2], kw, s[1])
    return np.pad(x, ((0, 0), (t, b), (l, r), (0, 0)), constant_values=value)


def conv_ref(x, w, s, padding, d=(1, 1)):
    kh, kw = (w.shape[0] - 1) * d[0] + 1, (w.shape[1] - 1) * d[1] + 1
    xp = _pad_nhwc(x, kh, kw, s, padding)
    oh, ow = (xp.shape[1] - kh) // s[0] + 1, (xp.shape[2] - kw) // s[1] + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * s[0]:i * s[0] + kh:d[0], j * s[1]:j * s[1] + kw:d[1], :]
            out[:, i, j, :] = np.einsum("nhwc,hwco->no", patch, w)
    return out


def pool_ref(x, k, s, padding, how):
    xp = _pad_nhwc(x, k[0], k[1], s, padding, -np.inf if how == "max" else np.nan)
    oh, ow = (xp.shape[1] - k[0]) // s[0] + 1, (xp.shape[2] - k[1]) // s[1] + 1
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1], :]
            out[:, i, j, :] = win.max((1, 2)) if how == "max" else np.nanmean(win, (1, 2))
    return out


def depthwise_ref(x, w, s, padding):
    c, m = w.shape[2], w.shape[3]
    outs = [conv_ref(x[..., ci:ci + 1], w[:, :, ci:ci + 1, :], s, padding) for ci in range(c)]
    return np.concatenate(outs, axis=3).reshape(x.shape[0], outs[0].shape[1], outs[0].shape[2],
                                                c * m)


def _run(fetch, feeds, level=2):
    with tf.Session() as sess:
        sess.optimize = level
        return sess.run(fetch, feeds)


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("stride,dilation", [((1, 1), (1, 1)), ((2, 2), (1, 1)),
                                             ((2, 1), (1, 1)), ((1, 1), (2, 2))])
def test_conv2d_matches_the_definition_in_both_layouts(padding, stride, dilation):
    x = RNG.standard_normal((2, 7, 6, 3))
    w = RNG.standard_normal((3, 2, 3, 4))
    want = conv_ref(x, w, stride, padding, dilation)
    xt = tf.placeholder(tf.float64, [None, 7, 6, 3])
    nhwc = tf.nn.conv2d(xt, tf.constant(w), [1, *stride, 1], padding, dilations=[1, *dilation, 1])
    nchw = tf.nn.conv2d(tf.transpose(xt, [0, 3, 1, 2]), tf.constant(w), [1, 1, *stride],
                        padding, data_format="NCHW", dilations=[1, 1, *dilation])
    for level in (0, 2):
        got, got_c = _run([nhwc, nchw], {xt: x}, level)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(got_c.transpose(0, 2, 3, 1), want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("how", ["max", "avg"])
def test_pooling_matches_the_definition(padding, how):
    x = RNG.standard_normal((2, 7, 5, 2))
    xt = tf.placeholder(tf.float64, [None, 7, 5, 2])
    fn = tf.nn.max_pool if how == "max" else tf.nn.avg_pool
    out = fn(xt, [1, 3, 2, 1], [1, 2, 2, 1], padding)
    nchw = fn(tf.transpose(xt, [0, 3, 1, 2]), [1, 1, 3, 2], [1, 1, 2, 2], padding,
              data_format="NCHW")
    want = pool_ref(x, (3, 2), (2, 2), padding, how)
    got, got_c = _run([out, nchw], {xt: x})
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got_c.transpose(0, 2, 3, 1), want, rtol=1e-12)


def test_avg_pool_same_counts_only_real_pixels():
    x = np.ones((1, 3, 3, 1))
    got = _run(tf.nn.avg_pool(tf.constant(x), [1, 2, 2, 1], [1, 2, 2, 1], "SAME"), None)
    np.testing.assert_allclose(got, np.ones((1, 2, 2, 1)))  # zero padding would give 0.5, 0.25


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_depthwise_conv2d_matches_per_channel_convolutions(padding):
    x = RNG.standard_normal((2, 6, 5, 3))
    w = RNG.standard_normal((3, 3, 3, 2))
    got = _run(tf.nn.depthwise_conv2d(tf.constant(x), tf.constant(w), [1, 2, 2, 1], padding),
               None)
    np.testing.assert_allclose(got, depthwise_ref(x, w, (2, 2), padding), rtol=1e-10)


@pytest.mark.parametrize("padding,out_hw", [("SAME", (7, 6)), ("SAME", (8, 6)),
                                            ("VALID", (7, 6)), ("VALID", (8, 7))])
def test_conv2d_transpose_is_the_adjoint_of_conv2d(padding, out_hw):
    w = RNG.standard_normal((3, 2, 2, 4))  # (kh, kw, out channels of the transpose, in)
    x = RNG.standard_normal((2, *out_hw, 2))
    y_shape = conv_ref(x, w, (2, 2), padding).shape
    y = RNG.standard_normal(y_shape)
    t = tf.nn.conv2d_transpose(tf.constant(y), tf.constant(w), [2, *out_hw, 2], [1, 2, 2, 1],
                               padding)
    got = _run(t, None)
    assert got.shape == x.shape
    # <conv(x), y> == <x, conv_transpose(y)>
    np.testing.assert_allclose(np.sum(conv_ref(x, w, (2, 2), padding) * y), np.sum(x * got),
                               rtol=1e-10)


def fd_check(build, arrays, eps=1e-6, rtol=1e-5, atol=1e-7):
    """tf.gradients of sum(build(*inputs) * R) against central differences, O0 and O2."""
    tf.reset_default_graph()
    holders = [tf.placeholder(tf.float64, a.shape) for a in arrays]
    out = build(*holders)
    weights = RNG.standard_normal(tuple(out.shape))
    loss = tf.reduce_sum(out * tf.constant(weights))
    grads = tf.gradients(loss, holders)
    for level in (0, 2):
        with tf.Session() as sess:
            sess.optimize = level
            feed = dict(zip(holders, arrays))
            analytic = sess.run(grads, feed)
            for k, a in enumerate(arrays):
                numeric = np.zeros_like(a)
                for idx in np.ndindex(a.shape):
                    plus, minus = a.copy(), a.copy()
                    plus[idx] += eps
                    minus[idx] -= eps
                    fp = sess.run(loss, {**feed, holders[k]: plus})
                    fm = sess.run(loss, {**feed, holders[k]: minus})
                    numeric[idx] = (fp - fm) / (2 * eps)
                np.testing.assert_allclose(analytic[k], numeric, rtol=rtol, atol=atol)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_conv2d_gradients(padding):
    fd_check(lambda x, w: tf.nn.conv2d(x, w, [1, 2, 2, 1], padding),
             [RNG.standard_normal((1, 5, 4, 2)), RNG.standard_normal((3, 2, 2, 2))])


def test_dilated_nchw_conv2d_gradients():
    fd_check(lambda x, w: tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", data_format="NCHW",
                                       dilations=[1, 1, 2, 2]),
             [RNG.standard_normal((1, 2, 5, 4)), RNG.standard_normal((2, 2, 2, 1))])


def test_conv2d_transpose_and_depthwise_gradients():
    fd_check(lambda y, w: tf.nn.conv2d_transpose(y, w, [1, 5, 4, 2], [1, 2, 2, 1], "SAME"),
             [RNG.standard_normal((1, 3, 2, 3)), RNG.standard_normal((2, 2, 2, 3))])
    fd_check(lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME"),
             [RNG.standard_normal((1, 4, 3, 2)), RNG.standard_normal((2, 2, 2, 2))])


def test_pooling_gradients():
    x = RNG.permutation(40).reshape(1, 5, 4, 2) * 0.1  # distinct values: no max ties
    fd_check(lambda x: tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"), [x])
    fd_check(lambda x: tf.nn.avg_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"), [x])


def test_bad_arguments_name_the_function():
    x = tf.placeholder(tf.float32, [None, 5, 5, 3])
    with pytest.raises(ShapeError, match="tf.nn.conv2d: .*3 channels"):
        tf.nn.conv2d(x, tf.zeros([3, 3, 2, 4]), [1, 1, 1, 1], "SAME")
    with pytest.raises(GraphError, match="padding must be 'SAME' or 'VALID'"):
        tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "FULL")
    with pytest.raises(GraphError, match="data_format"):
        tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME", data_format="NHCW")
    with pytest.raises(ShapeError, match="does not come from output_shape"):
        tf.nn.conv2d_transpose(x, tf.zeros([2, 2, 4, 3]), [1, 5, 5, 4], [1, 2, 2, 1], "SAME")
