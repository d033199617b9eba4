"""PyTorch's constructor parameters (issue 33) for the lazy norm layers (`bias=`, and the lazy
instance norms' affine, tracking defaults) and the transformer layers (`activation=F.relu` by
default): values and parameter names, without PyTorch and against it."""

import inspect

import numpy as np
import pytest

import dongjing as dj
from dongjing import nn
from dongjing.nn import functional as F

RNG = np.random.default_rng(3302)
LAZY = [("LazyBatchNorm1d", (4, 3)), ("LazyBatchNorm2d", (4, 3, 2, 2)),
        ("LazyBatchNorm3d", (4, 3, 2, 2, 2)), ("LazyInstanceNorm1d", (2, 3, 5)),
        ("LazyInstanceNorm2d", (2, 3, 4, 4)), ("LazyInstanceNorm3d", (2, 3, 2, 3, 3))]
IDS = [name for name, _ in LAZY]


def _parameter_names(module):
    return sorted(n for n, _ in module.named_parameters())


def _buffer_names(module):
    return sorted(n for n, _ in module.named_buffers())


# --- without PyTorch ----------------------------------------------------------------------------
@pytest.mark.parametrize("name,shape", LAZY, ids=IDS)
def test_lazy_norms_take_bias_and_pytorchs_defaults(name, shape):
    x = dj.tensor(RNG.standard_normal(shape).astype(np.float32))
    params = inspect.signature(getattr(nn, name)).parameters
    assert list(params) == ["eps", "momentum", "affine", "track_running_stats", "device",
                            "dtype", "bias"]
    layer = getattr(nn, name)()
    layer(x)
    assert layer.affine and layer.track_running_stats
    assert _parameter_names(layer) == ["bias", "weight"]
    no_shift = getattr(nn, name)(1e-5, 0.1, True, True, None, None, bias=False)
    no_shift(x)
    assert _parameter_names(no_shift) == ["weight"]
    plain = getattr(nn, name)(affine=False, track_running_stats=False)
    plain(x)
    assert _parameter_names(plain) == [] and _buffer_names(plain) == []


def test_transformer_layers_default_to_f_relu_as_pytorch():
    for cls in (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer, nn.Transformer):
        assert inspect.signature(cls).parameters["activation"].default is F.relu
    dj.manual_seed(0)
    default = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    named = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="relu")
    named.load_state_dict(default.state_dict())
    x = dj.tensor(RNG.standard_normal((5, 2, 8)).astype(np.float32))
    np.testing.assert_allclose(default(x).numpy(), named(x).numpy())
    assert default.activation is F.relu


# --- against PyTorch ----------------------------------------------------------------------------
@pytest.mark.parametrize("name,shape", LAZY, ids=IDS)
@pytest.mark.parametrize("kwargs", [{}, {"bias": False}, {"affine": False}],
                         ids=["default", "no-bias", "no-affine"])
def test_lazy_norms_agree_with_pytorch(name, shape, kwargs):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(shape).astype(np.float32)
    ours, theirs = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    got, expected = ours(dj.tensor(x)), theirs(torch.from_numpy(x))
    assert _parameter_names(ours) == _parameter_names(theirs)
    assert _buffer_names(ours) == _buffer_names(theirs)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    if "running_mean" in _buffer_names(ours):
        np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(),
                                   rtol=1e-5)


def test_transformer_default_activation_agrees_with_pytorch():
    torch = pytest.importorskip("torch")
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    ours = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    ours.load_state_dict({k: dj.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    x = RNG.standard_normal((5, 2, 8)).astype(np.float32)
    np.testing.assert_allclose(ours(dj.tensor(x)).detach().numpy(),
                               theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-4,
                               atol=1e-5)
