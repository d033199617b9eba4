"""The signatures changed to what PyTorch accepts (issue 33, the last rows of
docs/pytorch-coverage.md): `torch.relu(input)`, `bernoulli(..., out=)`, `repeat_interleave`'s
one-argument `repeats=` form and the method's required `repeats`, `split_copy(input,
split_size)`, `view_copy(input, dtype=)`, `Tensor.add/sub(other, alpha)` (with PyTorch's
deprecated number-then-tensor form), `F.max_pool2d`'s `dilation`/`ceil_mode`/`return_indices`
and `scaled_dot_product_attention`'s `enable_gqa`. Torch-free keyword calls first, then the
same calls against PyTorch (values and gradients), then eager == Session == jit."""

import inspect
import warnings

import numpy as np
import pytest

import dongjing as dj
from dongjing.errors import ArgumentError, ShapeError
from dongjing.nn import functional as F

RNG = np.random.default_rng(331)
X = RNG.standard_normal((3, 4))
IMAGE = RNG.standard_normal((1, 2, 7, 7))
Q, K, V = (RNG.standard_normal(s) for s in ((2, 4, 3, 5), (2, 2, 3, 5), (2, 2, 3, 5)))


# --- without PyTorch ----------------------------------------------------------------------------
def test_relu_takes_input_and_no_out():
    x = dj.tensor(X)
    np.testing.assert_array_equal(dj.relu(input=x).numpy(), np.maximum(X, 0))
    assert list(inspect.signature(dj.relu).parameters) == ["input"]
    with pytest.raises(TypeError):
        dj.relu(x, out=dj.empty(3, 4))


def test_bernoulli_out_without_p():
    probs = dj.tensor([0.0, 1.0, 1.0, 0.0])
    out = dj.empty(4)
    assert dj.bernoulli(input=probs, generator=None, out=out) is out
    np.testing.assert_array_equal(out.numpy(), [0, 1, 1, 0])
    with pytest.raises(ArgumentError, match="without p"):
        dj.bernoulli(probs, p=0.5, out=out)
    np.testing.assert_array_equal(dj.zeros(3).bernoulli(p=1.0).numpy(), [1, 1, 1])
    with pytest.raises(TypeError):
        probs.bernoulli(out=out)  # PyTorch's method takes no out=


def test_repeat_interleave_forms():
    counts = dj.tensor([2, 0, 1])
    np.testing.assert_array_equal(dj.repeat_interleave(repeats=counts).numpy(), [0, 0, 2])
    np.testing.assert_array_equal(dj.repeat_interleave(counts).numpy(), [0, 0, 2])
    got = dj.repeat_interleave(input=dj.tensor(X), repeats=2, dim=0, output_size=6)
    np.testing.assert_array_equal(got.numpy(), np.repeat(X, 2, 0))
    np.testing.assert_array_equal(dj.tensor([1, 2]).repeat_interleave(repeats=2).numpy(),
                                  [1, 1, 2, 2])
    with pytest.raises(ArgumentError, match="expects input and repeats"):
        dj.repeat_interleave()
    with pytest.raises(ArgumentError, match="dim="):
        dj.repeat_interleave(repeats=counts, dim=0)
    with pytest.raises(TypeError):
        dj.tensor([1, 2]).repeat_interleave()  # PyTorch's method needs repeats


def test_split_copy_and_view_copy_keywords():
    x = dj.tensor(X)
    pieces = dj.split_copy(input=x, split_size=2, dim=1)
    assert [p.shape for p in pieces] == [(3, 2), (3, 2)]
    np.testing.assert_array_equal(pieces[1].numpy(), X[:, 2:])
    with pytest.raises(ArgumentError, match="split_with_sizes_copy"):
        dj.split_copy(x, [1, 3], 1)
    np.testing.assert_array_equal(dj.view_copy(input=x, size=(4, 3)).numpy(), X.reshape(4, 3))
    a = np.array([[1.0, -2.0], [3.5, 0.25]], np.float32)
    for dtype in (dj.int32, dj.float16, dj.uint8):
        got = dj.view_copy(input=dj.tensor(a), dtype=dtype)
        np.testing.assert_array_equal(got.numpy(), a.view(np.dtype(dtype)))
    np.testing.assert_array_equal(dj.view_copy(dj.tensor(a), dj.int32).numpy(), a.view(np.int32))
    with pytest.raises(ArgumentError, match="one of them"):
        dj.view_copy(x, (12,), dtype=dj.int32)
    with pytest.raises(ShapeError, match="cannot be read"):
        dj.view_copy(dj.tensor(np.ones(3, np.float32)), dtype=dj.float64)


def test_add_and_sub_take_alpha_and_the_deprecated_form():
    x, y = dj.tensor(X), dj.tensor(X[::-1].copy())
    np.testing.assert_allclose(x.add(other=y, alpha=2).numpy(), X + 2 * X[::-1])
    np.testing.assert_allclose(x.subtract(other=y, alpha=0.5).numpy(), X - 0.5 * X[::-1])
    with pytest.warns(UserWarning, match="deprecated"):
        np.testing.assert_allclose(x.add(2, y).numpy(), X + 2 * X[::-1])
    with pytest.warns(UserWarning, match="deprecated"):
        np.testing.assert_allclose(x.clone().sub_(3, y).numpy(), X - 3 * X[::-1])
    z = x.clone()
    z.add_(other=y, alpha=-1)
    np.testing.assert_allclose(z.numpy(), X - X[::-1])
    for name in ("add", "add_", "sub", "sub_", "subtract"):
        assert list(inspect.signature(getattr(dj.Tensor, name)).parameters) == [
            "self", "other", "alpha"], name


def test_max_pool2d_general_path_agrees_with_the_op_table_path():
    # the default arguments take the op-table pooling; the n-d pooling must give the same bits
    x1, x2 = dj.tensor(IMAGE, requires_grad=True), dj.tensor(IMAGE, requires_grad=True)
    fast = F.max_pool2d(x1, 3, 2, 1)
    general = F.max_pool2d_with_indices(x2, 3, 2, 1)[0]
    np.testing.assert_array_equal(fast.numpy(), general.numpy())
    (fast * fast).sum().backward()
    (general * general).sum().backward()
    np.testing.assert_array_equal(x1.grad.numpy(), x2.grad.numpy())
    y, indices = F.max_pool2d(input=x1, kernel_size=2, return_indices=True)
    flat = IMAGE.reshape(1, 2, -1)
    np.testing.assert_array_equal(
        np.take_along_axis(flat, indices.numpy().reshape(1, 2, -1), 2).reshape(y.shape),
        y.numpy())
    assert F.max_pool2d(x1, 2, ceil_mode=True).shape == (1, 2, 4, 4)
    assert F.max_pool2d(x1, 2, dilation=2).shape == (1, 2, 3, 3)


def test_grouped_query_attention_repeats_the_key_and_value_heads():
    q, k, v = dj.tensor(Q), dj.tensor(K), dj.tensor(V)
    grouped = F.scaled_dot_product_attention(query=q, key=k, value=v, enable_gqa=True)
    wide = F.scaled_dot_product_attention(q, dj.repeat_interleave(k, 2, 1),
                                          dj.repeat_interleave(v, 2, 1))
    np.testing.assert_allclose(grouped.numpy(), wide.numpy(), rtol=1e-12)
    with pytest.raises(ShapeError, match="multiple"):
        F.scaled_dot_product_attention(q, dj.tensor(Q[:, :3]), dj.tensor(Q[:, :3]),
                                       enable_gqa=True)


def test_eager_static_and_jit_agree():
    def f(t):
        pooled, _ = F.max_pool2d(t, 2, dilation=2, ceil_mode=True, return_indices=True)
        return pooled.sum() + t.add(t, alpha=0.5).sum()

    def g(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    eager = f(dj.tensor(IMAGE)).numpy()
    np.testing.assert_allclose(dj.jit(f)(dj.tensor(IMAGE)).numpy(), eager, rtol=1e-12)
    eager_g = g(*(dj.tensor(a) for a in (Q, K, V))).numpy()
    np.testing.assert_allclose(dj.jit(g)(*(dj.tensor(a) for a in (Q, K, V))).numpy(), eager_g,
                               rtol=1e-12)
    for optimize in (0, 1, 2):
        with dj.Graph().as_default():
            image = dj.placeholder(dj.float64, IMAGE.shape)
            q, k, v = (dj.placeholder(dj.float64, a.shape) for a in (Q, K, V))
            out, out_g = f(image), g(q, k, v)
            with dj.Session(optimize=optimize) as sess:
                got, got_g = sess.run([out, out_g], {image: IMAGE, q: Q, k: K, v: V})
        np.testing.assert_allclose(got, eager, rtol=1e-12)
        np.testing.assert_allclose(got_g, eager_g, rtol=1e-12)


# --- against PyTorch ----------------------------------------------------------------------------
def _pair(torch, array):
    return dj.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)


def test_values_and_gradients_equal_pytorchs():
    torch = pytest.importorskip("torch")
    tF = torch.nn.functional
    x, tx = _pair(torch, X)
    np.testing.assert_allclose(dj.relu(input=x).numpy(), torch.relu(input=tx).detach().numpy())
    counts = np.array([2, 0, 3])
    np.testing.assert_array_equal(dj.repeat_interleave(repeats=dj.tensor(counts)).numpy(),
                                  torch.repeat_interleave(repeats=torch.tensor(counts)).numpy())
    for got, want in zip(dj.split_copy(input=x, split_size=3, dim=1),
                         torch.split_copy(input=tx, split_size=3, dim=1)):
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    a = X.astype(np.float32)
    np.testing.assert_array_equal(dj.view_copy(input=dj.tensor(a), dtype=dj.int16).numpy(),
                                  torch.view_copy(input=torch.tensor(a), dtype=torch.int16))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both warn of the deprecated form
        got = x.add(other=x * 2, alpha=3) + x.sub(0.5, x)
        want = tx.add(other=tx * 2, alpha=3) + tx.sub(0.5, tx)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)

    for kw in ({"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2},
               {"kernel_size": 2, "ceil_mode": True},
               {"kernel_size": 3, "stride": 2, "return_indices": True}):
        image, timage = _pair(torch, IMAGE)
        got, want = F.max_pool2d(input=image, **kw), tF.max_pool2d(input=timage, **kw)
        if kw.get("return_indices"):
            np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
            got, want = got[0], want[0]
        (got * got).sum().backward()
        (want * want).sum().backward()
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(image.grad.numpy(), timage.grad.numpy(), rtol=1e-12)

    ours, theirs = zip(*(_pair(torch, a) for a in (Q, K, V)))
    got = F.scaled_dot_product_attention(*ours, is_causal=True, scale=0.3, enable_gqa=True)
    want = tF.scaled_dot_product_attention(*theirs, is_causal=True, scale=0.3, enable_gqa=True)
    (got * got).sum().backward()
    (want * want).sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_bernoulli_out_as_pytorchs():
    torch = pytest.importorskip("torch")
    probs = np.array([0.0, 1.0, 1.0, 0.0])
    theirs = torch.empty(4, dtype=torch.float64)
    torch.bernoulli(input=torch.tensor(probs), generator=None, out=theirs)
    ours = dj.empty(4, dtype=dj.float64)
    dj.bernoulli(input=dj.tensor(probs), generator=None, out=ours)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(TypeError):
        torch.bernoulli(torch.tensor(probs), p=0.5, out=theirs)


def test_pool_layers_and_max_pool1d_options_as_pytorchs():
    torch = pytest.importorskip("torch")
    for kw in ({"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2, "ceil_mode": True},
               {"kernel_size": 2, "return_indices": True}):
        ours, theirs = dj.nn.MaxPool2d(**kw), torch.nn.MaxPool2d(**kw)
        assert repr(ours) == repr(theirs)
        image, timage = _pair(torch, IMAGE)
        got, want = ours(image), theirs(timage)
        if kw.get("return_indices"):
            np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
            got, want = got[0], want[0]
        got.sum().backward()
        want.sum().backward()
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(image.grad.numpy(), timage.grad.numpy(), rtol=1e-12)
    signal, tsignal = _pair(torch, RNG.standard_normal((2, 3, 11)))  # no ties
    got = F.max_pool1d(input=signal, kernel_size=3, stride=2, padding=1, dilation=2,
                       ceil_mode=True, return_indices=True)
    want = torch.nn.functional.max_pool1d(input=tsignal, kernel_size=3, stride=2, padding=1,
                                          dilation=2, ceil_mode=True, return_indices=True)
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
    got[0].sum().backward()
    want[0].sum().backward()
    np.testing.assert_allclose(got[0].detach().numpy(), want[0].detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(signal.grad.numpy(), tsignal.grad.numpy(), rtol=1e-12)
