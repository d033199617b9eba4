"""Keyword fidelity (issue 33): dongjing's PyTorch-facing functions take PyTorch's parameter
names (`input`, `other`, `dim`, `keepdim`, `out`, ...) and the NumPy-style aliases PyTorch
accepts (`axis`, `keepdims`). The torch-free tests check values against NumPy and the `out=`
and alias rules; the others run the same calls through PyTorch and compare."""

import inspect
import warnings

import numpy as np
import pytest

import dongjing as dj
from dongjing.core.torch_args import dim_aliases, method_form
from dongjing.errors import ArgumentError, AutogradError, DTypeError, ShapeError
from dongjing.nn import functional as dF

RNG = np.random.default_rng(33)
X = RNG.standard_normal((3, 4))
Y = RNG.standard_normal((3, 4))
S = RNG.standard_normal((4, 5))
B = RNG.standard_normal((2, 3, 4))
IDX = np.array([[0, 2, 1, 3], [3, 3, 0, 1], [1, 0, 2, 2]])


# --- without PyTorch ----------------------------------------------------------------------------
def test_pytorch_keyword_names_compute_what_numpy_does():
    x, y = dj.tensor(X), dj.tensor(Y)
    cases = [
        (dj.sum(input=x, dim=1, keepdim=True), X.sum(1, keepdims=True)),
        (dj.sum(x, axis=0, keepdims=True), X.sum(0, keepdims=True)),
        (dj.mean(input=x, axis=(0, 1)), X.mean()),
        (dj.amax(x, axis=1), X.max(1)),
        (dj.argmin(input=x, axis=0, keepdims=True), X.argmin(0)[None]),
        (dj.max(x, axis=1).values, X.max(1)),
        (dj.var(x, axis=1, correction=0), X.var(1)),
        (dj.std(x, 0, False), X.std(0)),  # PyTorch's older (dim, unbiased) form
        (dj.std(x, dim=0, unbiased=True), X.std(0, ddof=1)),
        (dj.cumsum(input=x, axis=1), X.cumsum(1)),
        (dj.logsumexp(x, axis=1, keepdims=True), np.log(np.exp(X).sum(1, keepdims=True))),
        (dj.softmax(input=x, axis=1), np.exp(X) / np.exp(X).sum(1, keepdims=True)),
        (dj.add(input=x, other=y, alpha=2), X + 2 * Y),
        (dj.sub(x, y, alpha=0.5), X - 0.5 * Y),
        (dj.div(input=x, other=y, rounding_mode="floor"), np.floor(X / Y)),
        (dj.div(x, y, rounding_mode="trunc"), np.trunc(X / Y)),
        (dj.true_divide(dividend=x, divisor=y), X / Y),
        (dj.matmul(input=x, other=dj.tensor(S)), X @ S),
        (dj.mm(input=x, mat2=dj.tensor(S)), X @ S),
        (dj.pow(input=x, exponent=2), X ** 2),
        (dj.clamp(input=x, min=-0.5, max=0.5), np.clip(X, -0.5, 0.5)),
        (dj.reshape(input=x, shape=(4, 3)), X.reshape(4, 3)),
        (dj.permute(input=x, dims=(1, 0)), X.T),
        (dj.transpose(input=x, dim0=0, dim1=1), X.T),
        (dj.flip(input=x, dims=(0, 1)), X[::-1, ::-1]),
        (dj.tile(input=x, dims=(2,)), np.tile(X, 2)),
        (dj.cat(tensors=[x, y], axis=1), np.concatenate([X, Y], 1)),
        (dj.stack([x, y], axis=2), np.stack([X, Y], 2)),
        (dj.take_along_dim(input=x, indices=dj.tensor(IDX), dim=1),
         np.take_along_axis(X, IDX, 1)),
        (dj.topk(x, k=2, axis=0).values, -np.sort(-X, 0)[:2]),
        (dj.sort(input=x, dim=1, descending=True).values, -np.sort(-X, 1)),
        (dj.norm(input=x, p=2, axis=1), np.linalg.norm(X, axis=1)),
        (dj.linalg.vector_norm(x, ord=1, axis=0), np.abs(X).sum(0)),
    ]
    for got, want in cases:
        np.testing.assert_allclose(np.asarray(got.numpy(), np.float64), want, rtol=1e-12)


def test_tensor_methods_take_the_method_names_and_the_aliases():
    x = dj.tensor(X)
    np.testing.assert_allclose(x.sum(axis=1, keepdims=True).numpy(), X.sum(1, keepdims=True))
    np.testing.assert_allclose(x.mul(value=2.0).numpy(), 2 * X)
    np.testing.assert_allclose(x.mul(other=3.0).numpy(), 3 * X)  # the function's name too
    np.testing.assert_allclose(x.view(4, 3).numpy(), X.reshape(4, 3))
    np.testing.assert_allclose(x.reshape((4, 3)).numpy(), X.reshape(4, 3))
    np.testing.assert_allclose(x.permute(1, 0).numpy(), X.T)
    np.testing.assert_allclose(x.flip(0, 1).numpy(), X[::-1, ::-1])
    np.testing.assert_allclose(x.var(1, False).numpy(), X.var(1))
    assert str(inspect.signature(dj.Tensor.abs)) == "(input: 'TensorLike') -> 'Tensor'"
    assert "out" in inspect.signature(dj.abs).parameters  # the function keeps out=
    assert list(inspect.signature(dj.Tensor.mul).parameters) == ["input", "value"]
    assert list(inspect.signature(dj.Tensor.mul_).parameters) == ["input", "value"]


def test_out_writes_into_the_given_tensor_and_refuses_a_wrong_one():
    x = dj.tensor(X)
    out = dj.zeros(3)
    result = dj.sum(x, 1, out=out)
    assert result is out
    np.testing.assert_allclose(out.numpy(), X.sum(1))
    values, indices = dj.zeros(3, dtype=dj.float64), dj.zeros(3, dtype=dj.int64)
    got = dj.max(x, dim=1, out=(values, indices))
    assert got.values is values and got.indices is indices
    np.testing.assert_array_equal(indices.numpy(), X.argmax(1))
    exp_out = dj.zeros(3, 4, dtype=dj.float64)
    dj.exp(x, out=exp_out)
    np.testing.assert_allclose(exp_out.numpy(), np.exp(X))
    with pytest.raises(ShapeError, match="does not fit"):
        dj.exp(x, out=dj.zeros(4, 3, dtype=dj.float64))
    with pytest.raises(DTypeError, match="can't be cast"):
        dj.exp(x, out=dj.zeros(3, 4, dtype=dj.int64))
    with pytest.raises(ArgumentError, match="out= must be a Tensor"):
        dj.exp(x, out=np.zeros((3, 4)))
    w = dj.tensor(X, requires_grad=True)
    with pytest.raises(AutogradError, match="don't support automatic differentiation"):
        dj.mul(w, 2.0, out=dj.zeros(3, 4, dtype=dj.float64))
    with dj.no_grad():
        dj.mul(w, 2.0, out=exp_out)
    np.testing.assert_allclose(exp_out.numpy(), 2 * X)


def test_an_alias_and_its_name_together_are_refused():
    with pytest.raises(ArgumentError, match="both 'dim' and its alias 'axis'"):
        dj.sum(dj.tensor(X), dim=0, axis=1)
    with pytest.raises(ArgumentError, match="unbiased= or correction="):
        dj.var(dj.tensor(X), unbiased=True, correction=0)


def test_the_helpers_keep_the_documented_signature():
    def total(input, dim=None, keepdim=False):
        return (input, dim, keepdim)

    wrapped = dim_aliases(total)
    assert inspect.signature(wrapped) == inspect.signature(total)
    assert wrapped(1, axis=2, keepdims=True) == (1, 2, True)
    with pytest.raises(TypeError, match="no dim or keepdim"):
        dim_aliases(lambda input: input)

    def scale(input, other, *, out=None):
        return (input, other, out)

    method = method_form(scale, {"other": "value"})
    assert list(inspect.signature(method).parameters) == ["input", "value"]
    assert method(1, value=2) == (1, 2, None)


def test_functional_and_modules_take_pytorch_arguments():
    x = dj.tensor(X)
    target = dj.tensor([0, 3, 1])
    with pytest.warns(UserWarning, match="size_average and reduce"):
        summed = dF.cross_entropy(x, target, size_average=False)
    np.testing.assert_allclose(summed.item(), dF.cross_entropy(x, target, reduction="sum").item())
    with pytest.warns(UserWarning):
        loss = dj.nn.MSELoss(reduce=False)
    assert loss.reduction == "none"
    np.testing.assert_array_equal(dF.one_hot(tensor=dj.tensor([0, 2])).numpy(),
                                  [[1, 0, 0], [0, 0, 1]])
    assert dF.one_hot(dj.tensor([1]), 3).dtype == dj.int64
    pooled = dF.avg_pool2d(dj.ones(1, 1, 3, 3), 2, padding=1, count_include_pad=False)
    np.testing.assert_allclose(pooled.numpy(), np.ones((1, 1, 2, 2)))
    assert dj.nn.BatchNorm1d(3, bias=False).bias is None
    running_mean, running_var = dj.zeros(4, dtype=dj.float64), dj.ones(4, dtype=dj.float64)
    dF.batch_norm(x, running_mean, running_var, training=True, momentum=0.5)
    np.testing.assert_allclose(running_mean.numpy(), 0.5 * X.mean(0))
    with pytest.raises(NotImplementedError, match="dilation"):
        dj.nn.Conv2d(1, 1, 3, dilation=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'inplace'"):
        dj.nn.Tanh(inplace=True)
    with pytest.raises(NotImplementedError, match="differentiable"):
        dj.optim.SGD([dj.nn.Parameter(dj.ones(1))], lr=0.1, differentiable=True)
    p = dj.nn.Parameter(dj.tensor([1.0]))
    opt = dj.optim.Adam([p], lr=0.1, maximize=True)
    (p * 2.0).sum().backward()
    opt.step()
    assert p.item() > 1.0  # ascends


def test_aliases_work_in_a_static_graph_and_under_jit():
    x = dj.tensor(X)

    def f(t):
        return dj.sum(t, axis=1, keepdims=True) + dj.mean(input=t, axis=0).sum()

    eager = f(x).numpy()
    np.testing.assert_allclose(dj.jit(f)(x).numpy(), eager, rtol=1e-12)
    with dj.Graph().as_default():
        ph = dj.placeholder(dj.float64, (None, 4))
        out = f(ph)
        with dj.Session() as sess:
            np.testing.assert_allclose(sess.run(out, {ph: X}), eager, rtol=1e-12)


# --- against PyTorch ----------------------------------------------------------------------------
def _same_calls():
    """(label, call(m, x, y)) run with m = torch and m = dongjing on float64 tensors."""
    return [
        ("sum", lambda m, x, y: m.sum(input=x, dim=1, keepdim=True)),
        ("sum-axis", lambda m, x, y: m.sum(x, axis=0, keepdims=True)),
        ("sum-dtype", lambda m, x, y: m.sum(x, dim=(0, 1), dtype=m.float32)),
        ("mean", lambda m, x, y: m.mean(input=x, axis=1, keepdims=True)),
        ("amax", lambda m, x, y: m.amax(input=x, dim=0, keepdim=True)),
        ("amin-axis", lambda m, x, y: m.amin(x, axis=1)),
        ("argmax", lambda m, x, y: m.argmax(input=x, dim=1, keepdim=True)),
        ("max-dim", lambda m, x, y: m.max(input=x, dim=1).values),
        ("min-axis", lambda m, x, y: m.min(x, axis=0).indices),
        ("prod", lambda m, x, y: m.prod(input=x, dim=1, keepdim=True)),
        ("cumsum", lambda m, x, y: m.cumsum(input=x, dim=1)),
        ("cumprod-axis", lambda m, x, y: m.cumprod(x, axis=0)),
        ("var", lambda m, x, y: m.var(input=x, dim=1, correction=0, keepdim=True)),
        ("var-unbiased", lambda m, x, y: m.var(x, 0, unbiased=False)),
        ("std-axis", lambda m, x, y: m.std(x, axis=1, keepdims=True)),
        ("var_mean", lambda m, x, y: m.var_mean(x, dim=1, correction=0)[0]),
        ("logsumexp", lambda m, x, y: m.logsumexp(input=x, dim=1, keepdim=True)),
        ("softmax", lambda m, x, y: m.softmax(input=x, dim=1)),
        ("log_softmax", lambda m, x, y: m.log_softmax(x, dim=0, dtype=m.float32)),
        ("all", lambda m, x, y: m.all(input=x > -5, dim=1)),
        ("any-axis", lambda m, x, y: m.any(x > 1, axis=0, keepdims=True)),
        ("add", lambda m, x, y: m.add(input=x, other=y, alpha=2)),
        ("sub", lambda m, x, y: m.sub(input=x, other=y, alpha=0.5)),
        ("mul", lambda m, x, y: m.mul(input=x, other=y)),
        ("div-floor", lambda m, x, y: m.div(input=x, other=y, rounding_mode="floor")),
        ("div-trunc", lambda m, x, y: m.div(x, y, rounding_mode="trunc")),
        ("div-int-trunc", lambda m, x, y: m.div(m.tensor([7, -7, 7, -7]),
                                                 m.tensor([2, 2, -2, -2]), rounding_mode="trunc")),
        ("true_divide", lambda m, x, y: m.true_divide(x, y)),  # PyTorch's doc and parser differ
        ("pow", lambda m, x, y: m.pow(input=x, exponent=2)),
        ("atan2", lambda m, x, y: m.atan2(input=x, other=y)),
        ("maximum", lambda m, x, y: m.maximum(input=x, other=y)),
        ("where", lambda m, x, y: m.where(condition=x > 0, input=x, other=y)),
        ("clamp", lambda m, x, y: m.clamp(input=x, min=-0.5, max=0.5)),
        ("exp", lambda m, x, y: m.exp(input=x)),
        ("sqrt", lambda m, x, y: m.sqrt(input=m.abs(input=x))),
        ("eq", lambda m, x, y: m.eq(input=x, other=x)),
        ("matmul", lambda m, x, y: m.matmul(input=x, other=y.T)),
        ("mm", lambda m, x, y: m.mm(input=x, mat2=y.T)),
        ("bmm", lambda m, x, y: m.bmm(input=x[None], mat2=y.T[None])),
        ("dot", lambda m, x, y: m.dot(input=x[0], tensor=y[0])),
        ("outer", lambda m, x, y: m.outer(input=x[0], vec2=y[0])),
        ("reshape", lambda m, x, y: m.reshape(input=x, shape=(4, 3))),
        ("permute", lambda m, x, y: m.permute(input=x, dims=(1, 0))),
        ("transpose", lambda m, x, y: m.transpose(input=x, dim0=0, dim1=1)),
        ("flatten", lambda m, x, y: m.flatten(input=x[None], start_dim=1)),
        ("squeeze", lambda m, x, y: m.squeeze(input=x[None], dim=0)),
        ("unsqueeze", lambda m, x, y: m.unsqueeze(input=x, dim=1)),
        ("flip", lambda m, x, y: m.flip(input=x, dims=(0,))),
        ("tile", lambda m, x, y: m.tile(input=x, dims=(2, 1))),
        ("broadcast_to", lambda m, x, y: m.broadcast_to(x[0], (2, 4))),
        ("cat", lambda m, x, y: m.cat(tensors=[x, y], dim=1)),
        ("stack", lambda m, x, y: m.stack(tensors=[x, y], dim=2)),
        ("gather", lambda m, x, y: m.gather(input=x, dim=1, index=m.tensor(IDX))),
        ("take_along_dim", lambda m, x, y: m.take_along_dim(input=x, indices=m.tensor(IDX[:1]),
                                                           dim=1)),
        ("index_select", lambda m, x, y: m.index_select(input=x, dim=1, index=m.tensor([2, 0]))),
        ("sort", lambda m, x, y: m.sort(input=x, dim=1, descending=True).values),
        ("topk", lambda m, x, y: m.topk(input=x, k=2, dim=1).values),
        ("norm", lambda m, x, y: m.norm(input=x, p=2, dim=1, keepdim=True)),
        ("tril", lambda m, x, y: m.tril(input=x, diagonal=-1)),
        ("nonzero", lambda m, x, y: m.nonzero(input=x > 0)),
        ("masked_select", lambda m, x, y: m.masked_select(input=x, mask=x > 0)),
        ("einsum", lambda m, x, y: m.einsum("ij,kj->ik", x, y)),
        ("lerp", lambda m, x, y: m.lerp(input=x, end=y, weight=0.25)),
        ("method-sum-axis", lambda m, x, y: x.sum(axis=1, keepdims=True)),
        ("method-div", lambda m, x, y: x.div(y, rounding_mode="floor")),
        ("method-view", lambda m, x, y: x.view(2, 6)),
        ("method-var", lambda m, x, y: x.var(1, False)),
        ("method-flip", lambda m, x, y: x.flip(0, 1)),
        ("F.softmax", lambda m, x, y: _F(m).softmax(input=x, dim=0)),
        ("F.log_softmax", lambda m, x, y: _F(m).log_softmax(input=x, dim=1)),
        ("F.linear", lambda m, x, y: _F(m).linear(input=x, weight=y, bias=None)),
        ("F.gelu", lambda m, x, y: _F(m).gelu(input=x, approximate="tanh")),
        ("F.elu", lambda m, x, y: _F(m).elu(input=x, alpha=0.5)),
        ("F.normalize", lambda m, x, y: _F(m).normalize(input=x, p=1.0, dim=0)),
        ("F.mse_loss-weight", lambda m, x, y: _F(m).mse_loss(input=x, target=y, weight=x * x)),
        ("F.l1_loss", lambda m, x, y: _F(m).l1_loss(input=x, target=y, reduction="sum")),
        ("F.cross_entropy", lambda m, x, y: _F(m).cross_entropy(
            input=x, target=m.tensor([0, 3, 1]), ignore_index=3, reduction="sum")),
        ("F.nll_loss-legacy", lambda m, x, y: _F(m).nll_loss(
            input=x, target=m.tensor([0, 3, 1]), reduce=False)),
        ("F.one_hot", lambda m, x, y: _F(m).one_hot(m.tensor([0, 2, 1]))),
        ("F.huber_loss-weight", lambda m, x, y: _F(m).huber_loss(x, y, delta=0.5, weight=x * x)),
        ("F.avg_pool2d-divisor", lambda m, x, y: _F(m).avg_pool2d(
            input=x[None, None], kernel_size=2, padding=1, divisor_override=3)),
        ("F.avg_pool2d-exclude", lambda m, x, y: _F(m).avg_pool2d(
            x[None, None], 2, padding=1, count_include_pad=False)),
        ("F.embedding", lambda m, x, y: _F(m).embedding(input=m.tensor([[0, 2]]), weight=x,
                                                        padding_idx=0)),
        ("linalg.norm", lambda m, x, y: m.linalg.norm(input=x, ord=1, dim=1)),
        ("linalg.vector_norm", lambda m, x, y: m.linalg.vector_norm(x=x, ord=3, dim=0)),
        ("linalg.inv", lambda m, x, y: m.linalg.inv(A=x[:3, :3] + 4 * m.eye(3,
                                                                               dtype=x.dtype))),
    ]


def _F(m):
    return m.nn.functional


def _array(value):
    if hasattr(value, "detach"):
        value = value.detach()
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


@pytest.mark.parametrize("label,call", _same_calls(), ids=[c[0] for c in _same_calls()])
def test_the_call_gives_what_pytorch_gives(label, call):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy size_average/reduce warning, both sides
        want = _array(call(torch, torch.tensor(X), torch.tensor(Y)))
        got = _array(call(dj, dj.tensor(X), dj.tensor(Y)))
    assert got.shape == want.shape, label
    if want.dtype.kind == "f":
        assert got.dtype == want.dtype, label
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12, err_msg=label)
    else:
        np.testing.assert_array_equal(got, want, err_msg=label)


def test_out_and_the_running_statistics_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    for m in (torch, dj):
        x = m.tensor(X)
        out = m.zeros(3, dtype=m.float64)
        m.sum(x, 1, out=out)
        values = m.zeros(3, dtype=m.float64)
        indices = m.zeros(3, dtype=m.int64)
        m.max(x, 1, out=(values, indices))
        mean, var = m.zeros(4, dtype=m.float64), m.ones(4, dtype=m.float64)
        m.nn.functional.batch_norm(x, mean, var, training=True, momentum=0.3)
        if m is torch:
            want = [t.numpy() for t in (out, values, indices, mean, var)]
    for got, expected in zip((out, values, indices, mean, var), want):
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_module_and_optimizer_arguments_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    results = []
    for m in (torch, dj):
        x = m.tensor(X[None, None])
        pool = m.nn.AvgPool2d(kernel_size=2, stride=1, padding=1, count_include_pad=False)
        pad = m.nn.ConstantPad1d(padding=1, value=2.5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = m.nn.CrossEntropyLoss(size_average=False)(m.tensor(X), m.tensor([0, 3, 1]))
        p = m.nn.Parameter(m.tensor([1.0, -2.0], dtype=m.float64))
        opt = m.optim.AdamW([p], lr=0.1, maximize=True, foreach=None)
        for _ in range(2):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
        emb = m.nn.Embedding(3, 4, max_norm=1.0, _weight=m.tensor(Y))
        looked = emb(m.tensor([0, 2]))
        results.append([_array(t) for t in (pool(x), pad(x[0]), loss, p, looked, emb.weight)])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_backward_accumulates_into_the_given_inputs_only():
    a = dj.tensor([1.0, 2.0], requires_grad=True)
    b = dj.tensor([3.0, 4.0], requires_grad=True)
    (a * b * b).sum().backward(inputs=[a])
    np.testing.assert_allclose(a.grad.numpy(), [9.0, 16.0])
    assert b.grad is None
    (a * b).sum().backward(inputs=a)
    np.testing.assert_allclose(a.grad.numpy(), [12.0, 20.0])
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (a * b).sum().backward(inputs=[])
