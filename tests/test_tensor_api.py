"""The PyTorch Tensor surface of issue 12: alpha/value keywords, in-place methods, new_*, t(),
dtype aliases and legacy constructors; against PyTorch when installed, and by hand."""

import numpy as np
import pytest

import dongjing as dj


def test_add_sub_alpha_by_hand():
    p = dj.tensor([1.0, 2.0])
    g = dj.tensor([10.0, 20.0])
    p.add_(g, alpha=-0.1)
    np.testing.assert_allclose(p.numpy(), [0.0, 0.0], atol=1e-6)
    p.sub_(g, alpha=0.5)
    np.testing.assert_allclose(p.numpy(), [-5.0, -10.0], atol=1e-6)
    np.testing.assert_allclose(p.add(g, alpha=2).numpy(), [15.0, 30.0])
    np.testing.assert_allclose(p.sub(g, alpha=2).numpy(), [-25.0, -50.0])


def test_unknown_keywords_are_refused():
    p = dj.ones(2)
    with pytest.raises(TypeError):
        p.add_(p, beta=2)
    with pytest.raises(TypeError, match="alpha must be a Python number"):
        p.add_(p, alpha=dj.tensor(2.0))
    with pytest.raises(TypeError, match="rounding_mode must be"):
        p.div_(2.0, rounding_mode="up")
    q = dj.tensor([7.0, -7.0])
    np.testing.assert_array_equal(q.div_(2.0, rounding_mode="floor").numpy(), [3.0, -4.0])
    with pytest.raises(NotImplementedError, match="generator"):
        p.uniform_(0, 1, generator=object())
    with pytest.raises(dj.DTypeError, match="can't be cast"):
        dj.tensor([1, 2]).div_(2)
    with pytest.raises(dj.ShapeError, match="does not fit in place"):
        dj.ones(3).add_(dj.ones(2, 3))


def _inplace_program(lib):
    w = lib.tensor([0.5, 1.5, -2.0], requires_grad=True)
    t1 = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    t2 = lib.tensor([2.0, 4.0, 5.0])
    y = w * 1.0
    y.add_(t1, alpha=-0.5)
    y.sub_(t2, alpha=0.25)
    y.addcmul_(t1, t2, value=0.3)
    y.addcdiv_(t1, t2, value=-2.0)
    y.mul_(t1).clamp_(min=-1.0, max=1.5)
    z = (y * y + 1).sqrt_()
    z.sum().backward()
    return [a.detach().numpy().copy() for a in (z, w.grad, t1.grad)]


def test_recorded_inplace_arithmetic_matches_pytorch():
    torch = pytest.importorskip("torch")
    for got, want in zip(_inplace_program(dj), _inplace_program(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_addcdiv_adam_like_update_matches_pytorch():
    torch = pytest.importorskip("torch")
    out = []
    for lib in (dj, torch):
        p = lib.tensor([1.0, -1.0, 0.5])
        m = lib.tensor([0.2, 0.1, -0.3])
        v = lib.tensor([0.04, 0.09, 0.01])
        p.addcdiv_(m, v.sqrt().add_(1e-8), value=-0.01)
        p.addcmul_(m, m, value=2.0)
        out.append(p.numpy().copy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-6)


def test_fill_copy_zero_and_random_fills():
    t = dj.empty(2, 3)
    t.fill_(2.5)
    assert t.tolist() == [[2.5] * 3] * 2
    t.copy_(dj.tensor([1, 2, 3]))  # broadcast and cast
    assert t.tolist() == [[1.0, 2.0, 3.0]] * 2
    t.zero_()
    assert not t.numpy().any()
    dj.manual_seed(0)
    t.uniform_(-0.5, 0.5)
    assert np.all((t.numpy() >= -0.5) & (t.numpy() < 0.5)) and t.numpy().std() > 0
    big = dj.empty(4000).normal_(3.0, 0.5)
    assert abs(big.numpy().mean() - 3.0) < 0.05 and abs(big.numpy().std() - 0.5) < 0.05
    with pytest.raises(dj.ShapeError, match="does not broadcast"):
        t.copy_(dj.ones(4))


def test_new_factories_and_t():
    x = dj.ones(2, 3, dtype=dj.float64)
    assert x.new_zeros(4).dtype == dj.float64 and x.new_zeros((2, 2)).shape == (2, 2)
    assert x.new_ones(2, 1).tolist() == [[1.0], [1.0]]
    assert x.new_full((2,), 7).tolist() == [7.0, 7.0]
    n = x.new_tensor([1, 2], dtype=dj.long)
    assert n.dtype == dj.int64 and n.tolist() == [1, 2]
    assert x.new_zeros(3, requires_grad=True).requires_grad
    assert x.t().shape == (3, 2) and dj.ones(3).t().shape == (3,)
    with pytest.raises(ValueError, match="at most 2 dims"):
        dj.ones(2, 2, 2).t()
    with pytest.raises(TypeError, match="must be integers"):
        x.new_zeros(2.5)


def test_dtype_aliases_and_legacy_constructors():
    assert dj.float == dj.float32 and dj.double == dj.float64 and dj.half == dj.float16
    assert dj.long == dj.int64 and dj.int == dj.int32 and dj.bool == np.dtype(bool)
    assert (dj.ones(2, dtype=dj.half) + 1).dtype == dj.float16
    t = dj.Tensor(2, 3)
    assert t.shape == (2, 3) and t.dtype == dj.float32 and not t.numpy().any()
    assert dj.Tensor([1, 2]).dtype == dj.float32  # as torch.Tensor([1, 2])
    assert dj.Tensor().shape == (0,)
    assert dj.FloatTensor([1, 2]).dtype == dj.float32
    assert dj.LongTensor([1, 2]).tolist() == [1, 2] and dj.LongTensor(3).dtype == dj.int64
    assert dj.DoubleTensor(2).dtype == dj.float64 and dj.BoolTensor([1, 0]).dtype == dj.bool
    with pytest.raises(TypeError, match="neither a dtype nor a device"):
        dj.ones(2).to("no-such-dtype")
    with pytest.raises(TypeError, match="expected a dtype"):
        dj.ones(2).to(None)


def test_legacy_constructors_match_pytorch():
    torch = pytest.importorskip("torch")
    for name in ("FloatTensor", "LongTensor", "DoubleTensor"):
        got, want = getattr(dj, name)([1, 2]), getattr(torch, name)([1, 2])
        assert str(got.dtype) == str(want.dtype).replace("torch.", "")
    assert dj.Tensor(2, 3).shape == tuple(torch.Tensor(2, 3).shape)
