"""The activation functions and modules added for PyTorch coverage: values and gradients
against PyTorch (table-driven), and torch-free checks of their behaviour."""

from __future__ import annotations

import numpy as np
import pytest
from torch_compare import compare, r

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing.errors import ArgumentError, ShapeError

X = r(3, 4, 5)
# (name, our function, PyTorch's function name in F, extra arguments, inputs)
FUNCTIONS = [
    ("softplus", {}, (X * 10,)),
    ("softplus", dict(beta=2.0, threshold=5.0), (X * 4,)),
    ("logsigmoid", {}, (X * 10,)),
    ("mish", {}, (X,)),
    ("hardtanh", {}, (X,)),
    ("hardtanh", dict(min_val=-0.5, max_val=1.5), (X,)),
    ("relu6", {}, (X * 4,)),
    ("hardsigmoid", {}, (X * 3,)),
    ("hardswish", {}, (X * 3,)),
    ("selu", {}, (X,)),
    ("celu", dict(alpha=0.7), (X,)),
    ("glu", {}, (r(3, 4),)),
    ("glu", dict(dim=1), (X[:, :4],)),
    ("hardshrink", dict(lambd=0.3), (X,)),
    ("softshrink", {}, (X,)),
    ("softsign", {}, (X,)),
    ("tanhshrink", {}, (X,)),
    ("threshold", dict(threshold=0.2, value=-3.0), (X,)),
    ("softmin", dict(dim=1), (X,)),
    ("prelu", {}, (X, np.array([0.1, 0.2, 0.3, 0.4]))),
    ("prelu", {}, (X, np.array([0.25]))),
    ("rrelu", {}, (X,)),
    ("elu", dict(alpha=0.5), (X,)),
    ("leaky_relu", dict(negative_slope=0.2), (X,)),
    ("alpha_dropout", dict(p=0.3), (X,)),  # training=False: the identity
    ("feature_alpha_dropout", dict(p=0.3), (X,)),
    ("dropout1d", dict(training=False), (X,)),
    ("dropout3d", dict(training=False), (r(2, 3, 2, 2, 2),)),
]


@pytest.mark.parametrize("name,kwargs,arrays", FUNCTIONS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(FUNCTIONS)])
def test_functions_equal_pytorch(name, kwargs, arrays):
    torch = pytest.importorskip("torch")
    compare(lambda *a: getattr(F, name)(*a, **kwargs),
            lambda *a: getattr(torch.nn.functional, name)(*a, **kwargs), arrays)


MODULES = [
    ("ReLU6", (), {}), ("Hardsigmoid", (), {}), ("Hardswish", (), {}), ("Mish", (), {}),
    ("SELU", (), {}), ("LogSigmoid", (), {}), ("Softsign", (), {}), ("Tanhshrink", (), {}),
    ("CELU", (0.5,), {}), ("Softplus", (), dict(beta=1.5)), ("Hardtanh", (-0.5, 0.5), {}),
    ("Hardshrink", (0.4,), {}), ("Softshrink", (0.4,), {}), ("GLU", (1,), {}),
    ("Threshold", (0.1, 2.0), {}), ("Softmin", (), dict(dim=2)), ("Softmax2d", (), {}),
    ("PReLU", (4,), dict(init=0.1)), ("RReLU", (0.1, 0.3), {}), ("AlphaDropout", (0.2,), {}),
    ("FeatureAlphaDropout", (0.2,), {}), ("Dropout1d", (0.2,), {}),
]


@pytest.mark.parametrize("name,args,kwargs", MODULES, ids=[m[0] for m in MODULES])
def test_modules_equal_pytorch_in_eval_mode(name, args, kwargs):
    torch = pytest.importorskip("torch")
    ours = getattr(nn, name)(*args, **kwargs).eval()
    theirs = getattr(torch.nn, name)(*args, **kwargs).eval().double()
    x = X[:, :4] if name in ("GLU", "PReLU") else X
    compare(ours, theirs, (x,))
    if name == "PReLU":
        assert ours.weight.shape == tuple(theirs.weight.shape)


def test_inplace_variants_write_their_input():
    for fn, args in [(F.hardtanh_, ()), (F.relu_, ()), (F.elu_, (0.5,)),
                     (F.leaky_relu_, (0.2,)), (F.threshold_, (0.1, 5.0)), (F.selu_, ()),
                     (F.celu_, (0.5,)), (F.rrelu_, ())]:
        x = dj.tensor(X.copy())
        out = fn(x, *args)
        assert out is x
        name = fn.__name__[:-1]
        expected = getattr(F, name)(dj.tensor(X), *args)
        np.testing.assert_allclose(x.numpy(), expected.numpy())


def test_softplus_is_stable_for_large_inputs():
    out = F.softplus(dj.tensor([-1000.0, 0.0, 15.0, 1000.0]))
    np.testing.assert_allclose(out.numpy(), [0.0, np.log(2.0), np.log1p(np.exp(15.0)), 1000.0],
                               rtol=1e-6)
    np.testing.assert_allclose(F.logsigmoid(dj.tensor([-1000.0, 1000.0])).numpy(),
                               [-1000.0, 0.0])


def test_bad_arguments_raise_named_errors():
    with pytest.raises(ShapeError, match="glu"):
        F.glu(dj.zeros(3, 5))
    with pytest.raises(ArgumentError, match="hardtanh"):
        F.hardtanh(dj.zeros(2), 1.0, -1.0)
    with pytest.raises(ShapeError, match="prelu"):
        F.prelu(dj.zeros(2, 3), dj.zeros(2))
    with pytest.raises(ShapeError, match="Softmax2d"):
        nn.Softmax2d()(dj.zeros(2, 3))
    with pytest.raises(ShapeError, match="dropout3d"):
        F.dropout3d(dj.zeros(2, 3))
    with pytest.raises(ArgumentError, match="AlphaDropout"):
        nn.AlphaDropout(1.5)


def test_rrelu_draws_slopes_within_bounds_in_training():
    dj.manual_seed(0)
    x = -dj.ones(2000)
    slopes = -F.rrelu(x, 0.1, 0.3, training=True).numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 0.01
    np.testing.assert_allclose(F.rrelu(dj.tensor([-2.0, 3.0]), 0.1, 0.3).numpy(), [-0.4, 3.0])


def test_alpha_dropout_keeps_mean_and_variance():
    dj.manual_seed(1)
    x = dj.randn(200000)
    y = F.alpha_dropout(x, 0.3, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1.0) < 0.02
    z = F.feature_alpha_dropout(dj.randn(50, 8, 3), 0.5, training=True).numpy()
    per_channel = z.std(axis=2)  # a dropped channel is constant
    assert (per_channel < 1e-6).any() and (per_channel > 1e-3).any()


def test_channel_dropouts_drop_whole_channels():
    dj.manual_seed(2)
    y = F.dropout1d(dj.ones(20, 6, 5), 0.5).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert (y.min(axis=2) == y.max(axis=2)).all()
    y3 = nn.Dropout3d(0.5)(dj.ones(4, 3, 2, 2, 2)).numpy()
    assert (y3.reshape(4, 3, -1).min(-1) == y3.reshape(4, 3, -1).max(-1)).all()


def test_gumbel_softmax_samples_and_hard_gradient():
    dj.manual_seed(3)
    logits = dj.tensor(np.log([[0.7, 0.2, 0.1]] * 4000), requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).numpy(), 1.0, rtol=1e-5)
    hard = F.gumbel_softmax(logits, hard=True)
    counts = hard.numpy().mean(0)
    np.testing.assert_allclose(counts, [0.7, 0.2, 0.1], atol=0.03)
    assert set(np.unique(hard.numpy())) == {0.0, 1.0}
    (hard * dj.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert logits.grad is not None and np.abs(logits.grad.numpy()).sum() > 0


def test_static_graph_and_jit_agree_with_eager():
    x = X.astype(np.float32)
    fns = [F.softplus, F.mish, F.selu, F.hardswish, F.softsign, lambda t: F.glu(t, 1),
           lambda t: F.softmin(t, 1), lambda t: F.prelu(t, dj.tensor([0.1, 0.2, 0.3, 0.4]))]
    for fn in fns:
        eager = fn(dj.tensor(x[:, :4])).numpy()
        with dj.Graph() as g:
            p = dj.placeholder((None, 4, 5))
            out = fn(p)
        for level in (0, 2):
            np.testing.assert_allclose(dj.Session(g, optimize=level).run(out, {p: x[:, :4]}),
                                       eager, rtol=1e-6)
        np.testing.assert_allclose(dj.jit(fn)(dj.tensor(x[:, :4])).numpy(), eager, rtol=1e-6)
