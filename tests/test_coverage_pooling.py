"""N-d pooling (max with indices, average, LP, adaptive, unpooling) and the lazy layers added
for PyTorch coverage: against PyTorch, and torch-free."""

from __future__ import annotations

import numpy as np
import pytest
from torch_compare import compare, pos, r

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing import optim
from dongjing.errors import ArgumentError, ShapeError

X1, X2, X3 = r(2, 3, 9), r(2, 3, 7, 6), r(1, 2, 5, 6, 4)
FUNCTIONS = [
    ("max_pool1d_with_indices", (X1,), dict(kernel_size=3, stride=2, padding=1)),
    ("max_pool1d_with_indices", (X1,), dict(kernel_size=2, dilation=2, ceil_mode=True)),
    ("max_pool2d_with_indices", (X2,), dict(kernel_size=(3, 2), stride=(2, 1), padding=1)),
    ("max_pool2d_with_indices", (X2[0],), dict(kernel_size=2, ceil_mode=True)),
    ("max_pool3d", (X3,), dict(kernel_size=2)),
    ("max_pool3d", (X3,), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("max_pool3d_with_indices", (X3,), dict(kernel_size=(2, 3, 2), dilation=(1, 1, 2))),
    ("avg_pool3d", (X3,), dict(kernel_size=2)),
    ("avg_pool3d", (X3,), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg_pool3d", (X3,), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ("avg_pool3d", (X3,), dict(kernel_size=2, divisor_override=3)),
    ("lp_pool1d", (pos(2, 3, 9),), dict(norm_type=2, kernel_size=3, stride=2)),
    ("lp_pool2d", (pos(2, 3, 7, 6),), dict(norm_type=3, kernel_size=2, ceil_mode=True)),
    ("lp_pool3d", (pos(1, 2, 5, 6, 4),), dict(norm_type=1.5, kernel_size=2)),
    ("adaptive_avg_pool1d", (X1,), dict(output_size=4)),
    ("adaptive_avg_pool3d", (X3,), dict(output_size=(2, 4, 3))),
    ("adaptive_max_pool1d", (X1,), dict(output_size=4, return_indices=True)),
    ("adaptive_max_pool2d", (X2,), dict(output_size=(3, 4))),
    ("adaptive_max_pool2d", (X2,), dict(output_size=(None, 4), return_indices=True)),
    ("adaptive_max_pool3d", (X3,), dict(output_size=2)),
    ("adaptive_max_pool3d_with_indices", (X3,), dict(output_size=(3, 2, 3))),
]


@pytest.mark.parametrize("name,arrays,kwargs", FUNCTIONS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(FUNCTIONS)])
def test_pooling_equals_pytorch(name, arrays, kwargs):
    torch = pytest.importorskip("torch")
    compare(lambda *a: getattr(F, name)(*a, **kwargs),
            lambda *a: getattr(torch.nn.functional, name)(*a, **kwargs), arrays)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_max_unpool_equals_pytorch(k):
    torch = pytest.importorskip("torch")
    x = (X1, X2, X3)[k - 1]
    pool = getattr(torch.nn.functional, f"max_pool{k}d")
    _, indices = pool(torch.tensor(x), 2, return_indices=True)
    values = r(*indices.shape, seed=5)
    ours = getattr(F, f"max_unpool{k}d")
    theirs = getattr(torch.nn.functional, f"max_unpool{k}d")
    size = x.shape
    compare(lambda v, i: ours(v, i, 2, output_size=size),
            lambda v, i: theirs(v, i, 2, output_size=size), (values, indices.numpy()))
    compare(lambda v, i: ours(v, i, 2), lambda v, i: theirs(v, i, 2),
            (values, indices.numpy()))


MODULES = [
    ("MaxPool3d", (2,), dict(stride=1), X3), ("AvgPool3d", (2,), dict(padding=1), X3),
    ("LPPool1d", (2, 3), {}, pos(2, 3, 9)), ("LPPool2d", (2, 2), {}, pos(2, 3, 7, 6)),
    ("LPPool3d", (2, 2), {}, pos(1, 2, 5, 6, 4)), ("AdaptiveAvgPool1d", (4,), {}, X1),
    ("AdaptiveAvgPool3d", (2,), {}, X3), ("AdaptiveMaxPool1d", (4,), {}, X1),
    ("AdaptiveMaxPool2d", ((3, 2),), {}, X2), ("AdaptiveMaxPool3d", (2,), {}, X3),
]


@pytest.mark.parametrize("name,args,kwargs,x", MODULES, ids=[m[0] for m in MODULES])
def test_pooling_modules_equal_pytorch(name, args, kwargs, x):
    torch = pytest.importorskip("torch")
    compare(getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs), (x,))


def test_unpool_modules_invert_pool_modules():
    pool, unpool = nn.MaxPool3d(2, return_indices=True), nn.MaxUnpool3d(2)
    x = dj.tensor(X3[:, :, :4, :6, :4])
    y, idx = pool(x)
    back = unpool(y, idx).numpy()
    assert back.shape == x.shape
    np.testing.assert_allclose(F.max_pool3d(dj.tensor(back), 2).numpy(), y.numpy())
    assert (back != 0).sum() == y.numpy().size
    out, idx1 = nn.AdaptiveMaxPool1d(3, return_indices=True)(dj.tensor(X1))
    np.testing.assert_array_equal(np.take_along_axis(X1, idx1.numpy(), -1),
                                  out.numpy())
    np.testing.assert_allclose(nn.MaxUnpool1d(3)(out, idx1, output_size=(9,)).numpy().sum(),
                               out.numpy().sum())


def test_pooling_errors_name_the_function():
    with pytest.raises(ShapeError, match="max_pool3d"):
        F.max_pool3d(dj.zeros(2, 3), 2)
    with pytest.raises(ArgumentError, match="padding"):
        F.avg_pool3d(dj.zeros(1, 1, 4, 4, 4), 2, padding=2)
    with pytest.raises(ShapeError, match="max_unpool2d"):
        F.max_unpool2d(dj.zeros(1, 1, 2, 2), dj.zeros(1, 1, 2, 2), 2)


def test_pooling_in_a_static_graph_equals_eager():
    x = X2.astype(np.float32)
    fns = [lambda t: F.max_pool2d_with_indices(t, 2)[0], lambda t: F.adaptive_max_pool2d(t, 3),
           lambda t: F.lp_pool2d(t * t, 2, 2), lambda t: F.adaptive_avg_pool1d(t[:, 0], 2)]
    for fn in fns:
        eager = fn(dj.tensor(x)).numpy()
        with dj.Graph() as g:
            p = dj.placeholder((None, 3, 7, 6))
            out = fn(p)
        for level in (0, 2):
            np.testing.assert_allclose(dj.Session(g, optimize=level).run(out, {p: x}), eager,
                                       rtol=1e-6)


LAZY = [("LazyLinear", (5,), "Linear", r(3, 4)),
        ("LazyConv1d", (4, 3), "Conv1d", r(2, 3, 8)),
        ("LazyConv2d", (4, 3), "Conv2d", r(2, 3, 6, 6)),
        ("LazyConvTranspose1d", (4, 3), "ConvTranspose1d", r(2, 3, 5)),
        ("LazyConvTranspose2d", (4, 3), "ConvTranspose2d", r(2, 3, 4, 4)),
        ("LazyBatchNorm1d", (), "BatchNorm1d", r(4, 3)),
        ("LazyBatchNorm2d", (), "BatchNorm2d", r(4, 3, 2, 2)),
        ("LazyBatchNorm3d", (), "BatchNorm3d", r(4, 3, 2, 2, 2)),
        ("LazyInstanceNorm1d", (), "InstanceNorm1d", r(2, 3, 5)),
        ("LazyInstanceNorm2d", (), "InstanceNorm2d", r(2, 3, 4, 4)),
        ("LazyInstanceNorm3d", (), "InstanceNorm3d", r(2, 3, 2, 3, 3))]


@pytest.mark.parametrize("name,args,becomes,x", LAZY, ids=[m[0] for m in LAZY])
def test_lazy_layers_become_their_layer(name, args, becomes, x):
    layer = getattr(nn, name)(*args)
    assert layer.has_uninitialized_params() and not list(layer.parameters())
    out = layer(dj.tensor(x.astype(np.float32)))
    assert type(layer) is getattr(nn, becomes)
    dj.manual_seed(0)
    # PyTorch's lazy instance norms default to affine=True, track_running_stats=True
    extra = dict(affine=True, track_running_stats=True) if "Instance" in name else {}
    fresh = getattr(nn, becomes)(x.shape[-1] if name == "LazyLinear" else x.shape[1], *args,
                                 **extra)
    fresh.load_state_dict(layer.state_dict())
    np.testing.assert_allclose(fresh(dj.tensor(x.astype(np.float32))).numpy(), out.numpy(),
                               rtol=1e-5, atol=1e-6)


def test_lazy_model_trains_after_a_dry_run():
    model = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(2))
    x, y = dj.randn(16, 5), dj.randn(16, 2)
    model(x)
    opt = optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.7
    assert model[0].weight.shape == (8, 5)
