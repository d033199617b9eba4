"""Unknown (None) dims stay unknown through shape inference, and indexing infers NumPy's shapes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import dongjing as dj
from dongjing.ops.index import parse_key
from dongjing.registry import OPS, Spec


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
    with pytest.raises(IndexError, match="out of bounds for dim 1 of size 3"):
        OPS["getitem"].infer(spec, key=(0, 5))
    with pytest.raises(IndexError, match="too many indices"):
        OPS["getitem"].infer(spec, key=(0, 0, 0))


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
