"""Views (basic indexing shares memory), in-place ops through views with autograd (CopySlices),
and `Tensor.data` as a detached Tensor: the traps of issue 12, against PyTorch and by hand."""

import numpy as np
import pytest

import dongjing as dj
from dongjing.autograd.views import InplaceError
from dongjing.errors import DongjingError


def test_writes_through_basic_index_views_reach_the_base():
    t = dj.zeros(3, 4)
    row = t[0]
    row[...] = 5.0
    t[1][2] = 7.0
    t[2].add_(1.0)
    t[:, 3:][1:] = -1.0
    expected = np.zeros((3, 4), np.float32)
    expected[0] = 5.0
    expected[1, 2] = 7.0
    expected[2] += 1.0
    expected[1:, 3] = -1.0
    np.testing.assert_array_equal(t.numpy(), expected)


def test_int_index_of_a_vector_is_a_0d_view():
    v = dj.arange(4)
    e = v[1]
    assert e.shape == () and e.item() == 1
    e.fill_(9)
    assert v.tolist() == [0, 9, 2, 3]


def test_advanced_indexing_returns_a_copy():
    t = dj.zeros(3)
    picked = t[dj.tensor([0, 2])]
    picked.fill_(1.0)
    masked = t[t == 0]
    masked.fill_(2.0)
    assert t.tolist() == [0.0, 0.0, 0.0]


def test_views_share_the_version_counter():
    base = dj.ones(3, requires_grad=True) * 2  # a non-leaf
    v = base[1:]
    y = v * v  # saves v
    base.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_inplace_on_a_view_of_a_leaf_that_requires_grad_raises():
    w = dj.ones(3, requires_grad=True)
    with pytest.raises(InplaceError, match="view of a leaf"):
        w[0].add_(1.0)
    with pytest.raises(InplaceError, match="view of a leaf"):
        w[1] = 2.0
    with pytest.raises(InplaceError, match="leaf tensor that requires grad"):
        w.mul_(2.0)
    assert isinstance(InplaceError("x"), DongjingError)
    with dj.no_grad():  # allowed, as in PyTorch
        w[0].add_(1.0)
    assert w.tolist() == [2.0, 1.0, 1.0]


def test_copyslices_gradient_by_hand():
    # b = 2w; b[0] *= a; loss = sum(b) -> dloss/dw = [2a, 2], dloss/da = 2 w[0]
    w = dj.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    a = dj.tensor([5.0, 6.0], requires_grad=True)
    b = w * 2
    b[0].mul_(a)
    b.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [[10.0, 12.0], [2.0, 2.0]])
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 4.0])
    assert b.grad_fn.name() == "CopySlices"


def test_setitem_records_history_on_a_non_leaf():
    w = dj.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = dj.tensor(10.0, requires_grad=True)
    b = w * 1.0
    b[1] = v
    (b * b).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 0.0, 6.0])
    np.testing.assert_allclose(v.grad.numpy(), 20.0)


def test_a_view_of_an_untracked_base_takes_history():
    base = dj.zeros(2, 2)
    other = base[:, 0]  # made before the write: its history is regenerated
    w = dj.tensor([1.0, 2.0], requires_grad=True)
    base[0].add_(w)
    assert base.requires_grad and other.requires_grad
    (other * 3).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 0.0])


def _views_program(lib):
    w = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    a = lib.tensor([2.0, 3.0, 4.0], requires_grad=True)
    c = lib.tensor(0.5, requires_grad=True)
    b = w * 2
    v = b[0]
    v2 = b[:, 1:]  # overlaps v: sees the write and its history
    v.mul_(a)
    v2[1:, :1].add_(c, alpha=3.0)
    vv = b[1][::2]
    vv.sub_(a[:2] * c)
    out = (b * b).sum() + (v2 * 3).sum() + v.sum() + vv.sum()
    out.backward()
    return [t.detach().numpy().copy() for t in (b, w.grad, a.grad, c.grad)]


def test_views_and_inplace_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    for got, want in zip(_views_program(dj), _views_program(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_saved_values_stay_intact_after_a_recorded_inplace_write():
    x = dj.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1.0
    y.pow_(2)  # pow saves its input: the old value, not y's memory
    y.mul_(3.0)
    y.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), [3.0, 12.0])
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 12.0])


# --- .data ---------------------------------------------------------------------------------
def test_data_is_a_detached_tensor_sharing_memory():
    p = dj.tensor([1.0, 2.0], requires_grad=True)
    d = p.data
    assert isinstance(d, dj.Tensor) and not d.requires_grad and d.grad_fn is None
    p.data.add_(dj.tensor([1.0, 1.0]), alpha=-0.5)  # no leaf error: .data is off the tape
    assert p.tolist() == [0.5, 1.5]
    p.data.uniform_(-0.1, 0.1)
    assert np.all(np.abs(p.numpy()) <= 0.1)
    p.data = dj.tensor([7.0, 8.0])
    assert p.tolist() == [7.0, 8.0] and p.requires_grad and p.is_leaf
    with pytest.raises(TypeError, match="must be a Tensor"):
        p.data = [1.0, 2.0]


def test_data_writes_are_not_seen_by_the_version_counter_as_in_pytorch():
    torch = pytest.importorskip("torch")
    for lib in (dj, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1.0
        z = y * y
        y.data.mul_(10.0)  # unsafe by design: no error, the new value is used
        z.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [20.0, 40.0])


def test_sgd_step_through_data_matches_pytorch():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (dj, torch):
        p = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        for _ in range(3):
            loss = (p * p).sum()
            loss.backward()
            p.data.add_(p.grad, alpha=-0.1)
            p.grad.zero_()
        results.append(p.detach().numpy().copy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
