"""Bad arguments raise a DongjingError naming the function and the argument, never a raw Python
error or a silent wrong result; legal edge cases (zero-sized layers, empty dims) work."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
from dongjing.errors import (
    ArgumentError,
    DongjingError,
    FeedError,
    IndexOutOfRangeError,
    ShapeError,
)

_X = dj.ones(2, 3)

_BAD_CALLS = [
    ("data", lambda: dj.tensor([[1, 2], [3]])),
    ("data", lambda: dj.tensor([[1.0], "a"])),
    ("data", lambda: dj.tensor(object())),
    ("dim", lambda: dj.sum(_X, "a")),
    ("dim", lambda: dj.sum(_X, 1.5)),
    ("dim", lambda: dj.sum(_X, (0, None))),
    ("dim", lambda: _X.mean("x")),
    ("dim", lambda: dj.amax(_X, 0.0)),
    ("dim", lambda: dj.softmax(_X, 1.5)),
    ("size", lambda: dj.ones(None)),
    ("size", lambda: dj.ones(-1, 3)),
    ("size", lambda: dj.ones(2.5)),
    ("size", lambda: dj.zeros((2, "3"))),
    ("size", lambda: dj.empty([True])),
    ("size", lambda: dj.randn(2, -2)),
    ("size", lambda: dj.rand(None)),
    ("size", lambda: dj.full((-2,), 1.0)),
    ("step", lambda: dj.arange(0, 10, 0)),
    ("end", lambda: dj.arange(0, "10")),
    ("fill_value", lambda: dj.full((2,), "a")),
    ("fill_value", lambda: dj.full((2,), None)),
    ("steps", lambda: dj.linspace(0, 1, -5)),
    ("steps", lambda: dj.linspace(0, 1, 2.5)),
    ("n", lambda: dj.eye(-1)),
    ("n", lambda: dj.randperm(-3)),
    ("high", lambda: dj.randint(5, 5, (2,))),
    ("in_features", lambda: nn.Linear(-1, 3)),
    ("out_features", lambda: nn.Linear(3, 2.5)),
    ("in_features", lambda: nn.Linear(None, 3)),
    ("num_embeddings", lambda: nn.Embedding(-1, 3)),
    ("padding_idx", lambda: nn.Embedding(3, 2, padding_idx=5)),
    ("in_channels", lambda: nn.Conv2d(0, 3, 3)),
    ("kernel_size", lambda: nn.Conv2d(1, 3, (3, 3, 3))),
    ("stride", lambda: nn.Conv2d(1, 3, 3, stride=0)),
    ("num_features", lambda: nn.BatchNorm1d(-4)),
    ("size", lambda: nn.LayerNorm((4, -1))),
    ("p", lambda: nn.Dropout(1.5)),
    ("p", lambda: nn.Dropout("0.5")),
]


@pytest.mark.parametrize("arg, call", _BAD_CALLS, ids=[f"{i}-{a}" for i, (a, _) in
                                                       enumerate(_BAD_CALLS)])
def test_bad_arguments_raise_a_dongjing_error_naming_the_argument(arg, call):
    with pytest.raises(DongjingError, match=f"'{arg}'"):
        call()


def test_argument_error_is_still_a_type_and_value_error():
    for kind in (TypeError, ValueError):
        with pytest.raises(kind):
            dj.ones(None)


def test_numpy_integers_and_tuples_are_valid_sizes():
    assert dj.ones(np.int64(2), np.int32(3)).shape == (2, 3)
    assert dj.zeros((2, 0)).shape == (2, 0)
    assert dj.full([2, 1], 3).shape == (2, 1) and dj.full(3, np.float32(1.5)).shape == (3,)
    assert dj.arange(np.int64(4)).shape == (4,) and dj.linspace(0, 1, 0).shape == (0,)
    assert dj.sum(_X, np.int64(1)).shape == (2,) and dj.sum(_X, [0, 1]).shape == ()


def test_linear_rejects_inputs_of_the_wrong_width():
    with pytest.raises(ShapeError, match=r"shape \(\) must end in a dim of 4"):
        nn.Linear(4, 3)(dj.tensor(1.0))
    with pytest.raises(ShapeError, match=r"shape \(2, 5\)"):
        nn.Linear(4, 3)(dj.ones(2, 5))


def test_zero_sized_linear_works_like_pytorch():
    layer = nn.Linear(0, 3)
    out = layer(dj.ones(2, 0))
    np.testing.assert_array_equal(out.numpy(), np.zeros((2, 3), np.float32))
    assert nn.Linear(3, 0)(dj.ones(2, 3)).shape == (2, 0)
    out.sum().backward()
    assert layer.weight.grad.shape == (3, 0)


def test_softmax_and_logsumexp_over_an_empty_dim():
    x = dj.ones(2, 0, requires_grad=True)
    assert dj.softmax(x, 1).shape == (2, 0) and dj.log_softmax(x, -1).shape == (2, 0)
    with np.errstate(divide="ignore"):
        lse = dj.logsumexp(x, 1)
    np.testing.assert_array_equal(lse.numpy(), [-np.inf, -np.inf])
    dj.softmax(x, 1).sum().backward()
    assert x.grad.shape == (2, 0)


def _graph():
    with dj.Graph() as g:
        t = dj.placeholder((4,), dj.float32, name="t")
        i = dj.placeholder((), dj.int64, name="i")
        ii = dj.placeholder((2,), dj.int64, name="ii")
        outs = (t[i] * 2.0, t[ii] * 2.0)
    return g, t, i, ii, outs


@pytest.mark.parametrize("bad", ["fast", 5, -1, True, 2.0, None])
def test_session_optimize_must_be_a_level(bad):
    g, *_ = _graph()
    with pytest.raises(ArgumentError, match="'optimize'"):
        dj.Session(g, optimize=bad)


@pytest.mark.parametrize("level", [0, 1, 2])
def test_out_of_range_indices_fed_at_run_time(level):
    g, t, i, ii, (one, two) = _graph()
    sess = dj.Session(g, optimize=level)
    assert sess.run(one, {t: np.arange(4.0), i: -1}) == 6.0
    with pytest.raises(IndexOutOfRangeError, match="'i'.*7"):
        sess.run(one, {t: np.arange(4.0), i: 7})
    with pytest.raises(IndexOutOfRangeError, match="'ii'"):
        sess.run(two, {t: np.arange(4.0), ii: np.array([1, -9])})
    assert isinstance(IndexOutOfRangeError("x"), IndexError)


@pytest.mark.parametrize("value", [np.uint64(2 ** 63 + 5), np.array([1, 2 ** 64 - 1], np.uint64)])
def test_integer_feeds_that_would_wrap_are_refused(value):
    with dj.Graph() as g:
        p = dj.placeholder((None,) if np.ndim(value) else (), dj.int64, name="p")
        q = dj.placeholder((), dj.int32, name="q")
        out, out32 = p + 1, q + 1
    sess = dj.Session(g)
    with pytest.raises(FeedError, match="'p'.*do not fit int64"):
        sess.run(out, {p: value})
    with pytest.raises(FeedError, match="'q'.*do not fit int32"):
        sess.run(out32, {q: np.int64(2 ** 31)})
    assert sess.run(out32, {q: np.int64(2 ** 31 - 2)}) == 2 ** 31 - 1
    assert sess.run(out, {p: np.uint64(2 ** 63 - 2) if not np.ndim(value) else
                          np.array([3], np.uint64)}).tolist() in (2 ** 63 - 1, [4])


def test_broadcast_to_like_refuses_fewer_dims_or_a_mismatch_eagerly_and_in_graphs():
    # eagerly, a small (1, 1) used to be copied into a (1,) result, and its gradient then failed
    for shape, like in [((1, 1), (1,)), ((3,), (1,))]:
        with pytest.raises(ShapeError, match=r"broadcast_to_like: cannot broadcast"):
            dj.ops.broadcast_to_like(dj.ones(shape), dj.ones(like))
        with dj.Graph():
            x = dj.placeholder(shape, dj.float32, name="x")
            with pytest.raises(ShapeError, match=r"broadcast_to_like: cannot broadcast"):
                dj.ops.broadcast_to_like(x, dj.placeholder((None,), dj.float32, name="y")
                                         if shape == (1, 1) else dj.ones(like))
    assert dj.ones(1, 3).expand_as(dj.ones(2, 2, 3)).shape == (2, 2, 3)
