"""Unknown (None) dims stay unknown through shape inference, and indexing infers NumPy's shapes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import dongjing as dj
from dongjing.core.registry import OPS, Spec
from dongjing.errors import IndexOutOfRangeError, ShapeError
from dongjing.ops.index import parse_key


@pytest.mark.parametrize("optimize", [0, 1, 2])
def test_slices_of_an_unknown_dim_follow_the_fed_array(optimize):
    with dj.Graph() as g:
        x = dj.placeholder((None, 100), dj.float32, name="x")
        y = x[::2] * 2.0 + 1.0
        z = x[3:] * 2.0
        w = x[:5]
    assert y.shape == (None, 100) and z.shape == (None, 100) and w.shape == (None, 100)
    sess = dj.Session(g, optimize=optimize)
    for rows in (2, 7, 1500):
        data = np.arange(rows * 100, dtype=np.float32).reshape(rows, 100)
        ys, zs, ws = sess.run([y, z, w], {x: data})
        np.testing.assert_allclose(ys, data[::2] * 2 + 1)
        np.testing.assert_allclose(zs, data[3:] * 2)
        np.testing.assert_allclose(ws, data[:5])


KEYS = [0, -1, slice(1, None), slice(None, None, 2), slice(-3, -1), (None, 0), (Ellipsis, 1),
        (0, Ellipsis, None), (slice(None), None, 2), (1, slice(0, 2)), (Ellipsis,),
        (slice(5, 1),), (None, Ellipsis, None)]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_basic_index_shapes_equal_numpy(key):
    data = np.zeros((4, 3, 5))
    template, _ = parse_key(key)
    shape, _ = OPS["getitem"].infer(Spec(data.shape, data.dtype), key=template)
    assert shape == data[key].shape


@pytest.mark.parametrize("key", [(np.array([0, 2]),), (np.array([0, 2]), 1),
                                 (slice(None), np.array([[0], [1]]), np.array([1, 2])),
                                 (np.array([1, 0]), slice(None), np.array([2, 3])),
                                 (0, slice(None), np.array([1, 1, 0]))], ids=repr)
def test_advanced_index_shapes_equal_numpy(key):
    data = np.zeros((4, 3, 5))
    template, tensors = parse_key(key)
    specs = [Spec(t.shape, t.dtype) for t in tensors]
    shape, _ = OPS["getitem"].infer(Spec(data.shape, data.dtype), *specs, key=template)
    assert shape == data[key].shape


def test_unknown_dims_propagate_and_a_mask_gives_an_unknown_length():
    spec = Spec((None, 6), np.dtype("float32"))
    for key, want in [((slice(None, 3),), (None, 6)), ((0,), (6,)), ((None, 1), (1, 6)),
                      ((slice(None), slice(2, 4)), (None, 2))]:
        assert OPS["getitem"].infer(spec, key=parse_key(key)[0])[0] == want
    mask = Spec((None, 6), np.dtype("bool"))
    assert OPS["getitem"].infer(spec, mask, key=parse_key(dj.tensor([[True]]))[0])[0] == (None,)


def test_out_of_range_and_too_many_indices_are_named():
    spec = Spec((4, 3), np.dtype("float32"))
    with pytest.raises(IndexOutOfRangeError, match="out of bounds for dim 1 of size 3"):
        OPS["getitem"].infer(spec, key=(0, 5))
    with pytest.raises(IndexOutOfRangeError, match="too many indices"):
        OPS["getitem"].infer(spec, key=(0, 0, 0))
    with pytest.raises(IndexOutOfRangeError, match=r"too many indices \(2\).*shape \(3,\)"):
        dj.zeros(3)[:, 1:]  # a dongjing error (still an IndexError), not a raw one


def test_every_small_slice_of_a_known_dim_matches_numpy():
    data = np.zeros(5)
    for start, stop, step in itertools.product([None, -6, -2, 0, 3, 7], [None, -1, 2, 9],
                                               [None, 1, 2, -1, -3]):
        template, _ = parse_key(slice(start, stop, step))
        shape, _ = OPS["getitem"].infer(Spec(data.shape, data.dtype), key=template)
        assert shape == data[start:stop:step].shape


@pytest.mark.parametrize("optimize", [0, 2])
def test_a_gradient_broadcast_against_an_unknown_dim_is_reduced_when_the_graph_runs(optimize):
    with dj.Graph() as g:
        a = dj.placeholder((None,), dj.float64, name="a")
        b = dj.placeholder((3,), dj.float64, name="b")
        c = dj.placeholder((None,), dj.float64, name="c")
        (ga,) = dj.gradients((a * b).sum(), [a])
        gc, gb = dj.gradients((c * b * a).sum(), [c, b])
    sess = dj.Session(g, optimize=optimize)
    bv = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(sess.run(ga, {a: [2.0], b: bv}), [6.0])
    np.testing.assert_allclose(sess.run(ga, {a: [2.0, 1.0, 0.5], b: bv}), bv)
    got_c, got_b = sess.run([gc, gb], {a: [2.0], b: bv, c: [1.0, 1.0, 1.0]})
    np.testing.assert_allclose(got_c, bv * 2.0)
    np.testing.assert_allclose(got_b, [2.0, 2.0, 2.0])
    ta, tb = dj.tensor([2.0], requires_grad=True), dj.tensor(bv)
    (ta * tb).sum().backward()
    np.testing.assert_allclose(ta.grad.numpy(), [6.0])


def _run_both(g, fetches, feed, levels=(0, 2)):
    return [dj.Session(g, optimize=level).run(fetches, feed) for level in levels]


def test_broadcast_to_like_gradient_is_reduced_when_the_unknown_dim_is_fed_as_1():
    with dj.Graph() as g:
        a = dj.placeholder((None, 5), dj.float32, name="a")
        b = dj.placeholder((None, 5), dj.float32, name="b")
        (gb,) = dj.gradients(dj.ops.broadcast_to_like(b, a).sum(), [b])
    for got in _run_both(g, gb, {a: np.ones((4, 5), np.float32), b: np.ones((1, 5), np.float32)}):
        np.testing.assert_allclose(got, np.full((1, 5), 4.0))


def test_matmul_gradient_over_broadcast_unknown_batch_dims():
    av, bv = np.random.default_rng(0).standard_normal((2, 1, 2, 3)), np.ones((5, 3, 4))
    ta = dj.tensor(av, requires_grad=True)
    tb = dj.tensor(bv, requires_grad=True)
    want = [t.numpy() for t in dj.grad(dj.matmul(ta, tb).sum(), [ta, tb])]
    with dj.Graph() as g:
        a = dj.placeholder((None, None, 2, 3), dj.float64, name="a")
        b = dj.placeholder((None, 3, 4), dj.float64, name="b")
        grads = dj.gradients(dj.matmul(a, b).sum(), [a, b])
    for got in _run_both(g, grads, {a: av, b: bv}):
        for x, w in zip(got, want):
            np.testing.assert_allclose(x, w)


@pytest.mark.parametrize("dim", [0, 1])
def test_concat_gradient_splits_by_run_time_sizes(dim):
    av, bv = np.arange(6.0).reshape(3, 2), np.arange(4.0).reshape(2, 2) + 10
    if dim == 1:
        av, bv = av.T.copy(), bv.T.copy()
    weights = np.arange(16.0).reshape(8, 2) if dim == 0 else np.arange(16.0).reshape(2, 8)
    ta, tb = dj.tensor(av, requires_grad=True), dj.tensor(bv, requires_grad=True)
    want = [t.numpy() for t in dj.grad((dj.cat([ta, tb, ta], dim) * weights).sum(), [ta, tb])]
    with dj.Graph() as g:
        unknown = (None, 2) if dim == 0 else (2, None)
        a = dj.placeholder(unknown, dj.float64, name="a")
        b = dj.placeholder(unknown, dj.float64, name="b")
        grads = dj.gradients((dj.cat([a, b, a], dim) * weights).sum(), [a, b])
    for got in _run_both(g, grads, {a: av, b: bv}, levels=(0, 1, 2)):
        np.testing.assert_allclose(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1])


def test_cumprod_gradient_with_an_unknown_scanned_dim():
    xv = np.random.default_rng(1).standard_normal((3, 4))
    xv[1, 2] = 0.0  # the zero-safe rule, the one graphs use
    t = dj.tensor(xv, requires_grad=True)
    weights = np.arange(12.0).reshape(3, 4)
    for dim in (0, 1):
        (want,) = dj.grad((dj.cumprod(t, dim) * weights).sum(), [t])
        with dj.Graph() as g:
            x = dj.placeholder((None, None), dj.float64, name="x")
            (gx,) = dj.gradients((dj.cumprod(x, dim) * weights).sum(), [x])
        for got in _run_both(g, gx, {x: xv}):
            np.testing.assert_allclose(got, want.numpy())


def test_conv2d_with_unknown_batch_and_out_channels():
    rng = np.random.default_rng(2)
    xv, wv = rng.standard_normal((3, 4)), rng.standard_normal((2, 1, 2, 2))
    F = dj.nn.functional
    tx, tw = dj.tensor(xv, requires_grad=True), dj.tensor(wv, requires_grad=True)
    out = F.conv2d(dj.reshape(tx, (-1, 1, 3, 4)), tw, None, 1, 1)
    want = [out.numpy()] + [t.numpy() for t in dj.grad(out.sum(), [tx, tw])]
    with dj.Graph() as g:
        x = dj.placeholder((None, 4), dj.float64, name="x")
        w = dj.placeholder((None, 1, 2, 2), dj.float64, name="w")
        y = F.conv2d(dj.reshape(x, (-1, 1, 3, 4)), w, None, 1, 1)
        fetches = [y, *dj.gradients(y.sum(), [x, w])]
    assert y.shape == (None, None, 4, 5)
    for got in _run_both(g, fetches, {x: xv, w: wv}):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b)


def test_sizes_that_must_be_known_are_refused_by_name():
    with dj.Graph():
        x = dj.placeholder((None, 4), dj.float32, name="x")
        with pytest.raises(ShapeError, match=r"reshape: the new shape \(None, 2\)"):
            dj.reshape(x, (None, 2))
        with pytest.raises(ShapeError, match="squeeze: shape \\(None, 4\\) has unknown dims"):
            dj.squeeze(x)
        w = dj.placeholder((2, 1, None, 2), dj.float32, name="w")
        with pytest.raises(ShapeError, match="conv2d: the weight's shape"):
            dj.nn.functional.conv2d(dj.reshape(x, (-1, 1, 2, 2)), w)


def test_logsumexp_over_an_unknown_dim_fed_empty_gives_minus_inf():
    with dj.Graph() as g:
        x = dj.placeholder((None, 1, 3), dj.float32, name="x")
        y = dj.logsumexp(x, dim=0)
        (gx,) = dj.gradients(y.sum(), [x])
    for rows in (0, 2):
        xv = np.random.default_rng(rows).random((rows, 1, 3)).astype(np.float32)
        want = dj.logsumexp(dj.tensor(xv), dim=0).numpy()
        with np.errstate(divide="ignore"):
            for got, grad in _run_both(g, [y, gx], {x: xv}):
                np.testing.assert_allclose(got, want, rtol=1e-6)
                assert grad.shape == xv.shape


@pytest.mark.parametrize("fn", [dj.amax, dj.amin, dj.argmax, dj.argmin])
def test_reducing_an_unknown_dim_fed_empty_names_the_op(fn):
    with dj.Graph() as g:
        x = dj.placeholder((None, 3), dj.float32, name="x")
        y = fn(x, 0)
    for level in (0, 2):
        with pytest.raises(ShapeError, match=f"{fn.__name__}: cannot reduce an empty tensor of "
                                             r"shape \(0, 3\)"):
            dj.Session(g, optimize=level).run(y, {x: np.ones((0, 3), np.float32)})


def test_stack_accepts_shapes_that_agree_where_known():
    with dj.Graph() as g:
        a = dj.placeholder((1, None), dj.float64, name="a")
        b = dj.placeholder((None, 1), dj.float64, name="b")
        s = dj.stack([a, b], 0)
        (ga,) = dj.gradients((s * 2.0).sum(), [a])
        with pytest.raises(ShapeError, match=r"stack: all tensors need the same shape; got "
                                             r"\(1, None\), \(2, 1\)"):
            dj.stack([a, dj.placeholder((2, 1), dj.float64, name="c")], 0)
    for got, grad in _run_both(g, [s, ga], {a: [[3.0]], b: [[4.0]]}):
        np.testing.assert_array_equal(got, [[[3.0]], [[4.0]]])
        np.testing.assert_array_equal(grad, [[2.0]])
    for level in (0, 2):  # fed sizes that disagree: a named error when the graph runs
        with pytest.raises(ShapeError, match=r"concat: shapes \(1, 1, 2\), \(1, 1, 1\) differ"):
            dj.Session(g, optimize=level).run(s, {a: np.ones((1, 2)), b: np.ones((1, 1))})


def test_squeezing_an_unknown_dim_that_is_not_one_when_the_graph_runs_is_a_named_error():
    with dj.Graph() as g:
        x = dj.placeholder((None,), dj.float64, name="x")
        y = dj.squeeze(x[x > 0], 0)
    for level in (0, 1, 2):
        with dj.Session(g, optimize=level) as sess:
            assert sess.run(y, {x: np.array([2.0])}).shape == ()
            with pytest.raises(ShapeError, match=r"squeeze: dim 0 of shape \(0,\) has size 0, "
                               r"not 1"):
                sess.run(y, {x: np.array([-2.0])})
