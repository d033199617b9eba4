"""Layers and containers added for PyTorch coverage (Bilinear, RMSNorm, LocalResponseNorm,
ChannelShuffle, BatchNorm3d, Unflatten, Upsampling*, DataParallel, ParameterList/Dict,
Container): against PyTorch and torch-free."""

from __future__ import annotations

import numpy as np
import pytest
from torch_compare import compare, pos, r

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing import optim
from dongjing.errors import ShapeError

FUNCTIONS = [
    ("bilinear", (r(4, 3), r(4, 2, seed=1), r(5, 3, 2, seed=2), r(5, seed=3)), {}),
    ("bilinear", (r(2, 4, 3), r(2, 4, 2, seed=1), r(5, 3, 2, seed=2)), {}),
    ("rms_norm", (r(3, 4, 5), pos(5)), dict(normalized_shape=(5,))),
    ("rms_norm", (r(3, 4, 5),), dict(normalized_shape=(4, 5), eps=1e-3)),
    ("local_response_norm", (r(2, 6, 3, 3),), dict(size=3, alpha=0.5, beta=0.7, k=2.0)),
    ("local_response_norm", (r(2, 5, 4),), dict(size=4, alpha=0.3)),
    ("local_response_norm", (r(2, 6, 2, 2, 2),), dict(size=2)),
    ("channel_shuffle", (r(2, 6, 3),), dict(groups=3)),
]


@pytest.mark.parametrize("name,arrays,kwargs", FUNCTIONS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(FUNCTIONS)])
def test_functions_equal_pytorch(name, arrays, kwargs):
    torch = pytest.importorskip("torch")
    if name == "rms_norm":  # the weight is PyTorch's third argument
        ours = lambda x, *w: F.rms_norm(x, weight=w[0] if w else None, **kwargs)  # noqa: E731
        theirs = lambda x, *w: torch.nn.functional.rms_norm(  # noqa: E731
            x, weight=w[0] if w else None, **kwargs)
    else:
        ours = lambda *a: getattr(F, name)(*a, **kwargs)  # noqa: E731
        theirs = lambda *a: getattr(torch.nn.functional, name)(*a, **kwargs)  # noqa: E731
    compare(ours, theirs, arrays)


def _copy_state(torch, ours, theirs):
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    return theirs.double()


MODULES = [
    ("Bilinear", (3, 2, 4), (r(5, 3), r(5, 2, seed=1))),
    ("RMSNorm", (5,), (r(3, 4, 5),)),
    ("LocalResponseNorm", (3,), (r(2, 6, 3, 3),)),
    ("CrossMapLRN2d", (5, 0.1, 0.5, 2.0), (r(2, 6, 3, 3),)),
    ("ChannelShuffle", (2,), (r(2, 4, 3, 3),)),
    ("BatchNorm3d", (3,), (r(2, 3, 2, 3, 2),)),
    ("Unflatten", (1, (2, 3)), (r(4, 6),)),
    ("UpsamplingNearest2d", (None, 2), (r(1, 2, 3, 3),)),
    ("UpsamplingBilinear2d", ((5, 4),), (r(1, 2, 3, 3),)),
]


@pytest.mark.parametrize("name,args,arrays", MODULES, ids=[m[0] for m in MODULES])
def test_modules_equal_pytorch(name, args, arrays):
    torch = pytest.importorskip("torch")
    ours = getattr(nn, name)(*args)
    theirs = _copy_state(torch, ours, getattr(torch.nn, name)(*args))
    if name == "CrossMapLRN2d":  # PyTorch's hand-written backward fails its own gradcheck
        compare(ours, theirs, arrays, grad=False, rtol=1e-6)
        assert dj.autograd.gradcheck(ours, (dj.tensor(arrays[0], requires_grad=True),))
        return
    compare(ours, theirs, arrays)
    if name == "BatchNorm3d":  # running statistics after a training step, then eval mode
        np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy())
        compare(ours.eval(), theirs.eval(), arrays)


def test_parameter_list_and_dict_train_and_save():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.weights = nn.ParameterList([dj.ones(3), nn.Parameter(dj.ones(3) * 2)])
            self.extra = nn.ParameterDict({"scale": nn.Parameter(dj.ones(1))})

        def forward(self, x):
            for w in self.weights:
                x = x * w
            return x * self.extra["scale"]

    model = Model()
    names = [n for n, _ in model.named_parameters()]
    assert names == ["weights.0", "weights.1", "extra.scale"]
    opt = optim.SGD(model.parameters(), lr=0.1)
    model(dj.ones(3)).sum().backward()
    opt.step()
    np.testing.assert_allclose(model.extra["scale"].numpy(), [1 - 0.1 * 6])
    state = model.state_dict()
    other = Model()
    other.load_state_dict(state)
    np.testing.assert_allclose(other.weights[1].numpy(), model.weights[1].numpy())
    assert len(model.weights) == 2 and "scale" in model.extra
    model.extra["bias"] = dj.zeros(2)
    assert model.extra.keys() == ["scale", "bias"] and len(list(model.parameters())) == 4
    assert model.extra.pop("bias").shape == (2,) and len(model.extra) == 1


def test_container_data_parallel_and_errors():
    with pytest.warns(DeprecationWarning):
        box = nn.Container(lin=nn.Linear(2, 3))
    assert [n for n, _ in box.named_parameters()] == ["lin.weight", "lin.bias"]
    inner = nn.Linear(2, 3)
    dp = nn.DataParallel(inner)
    x = dj.randn(4, 2)
    np.testing.assert_array_equal(dp(x).numpy(), inner(x).numpy())
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    with pytest.raises(ShapeError, match="channel_shuffle"):
        F.channel_shuffle(dj.zeros(2, 5, 3), 2)
    with pytest.raises(ShapeError, match="rms_norm"):
        F.rms_norm(dj.zeros(2, 3), (4,))
    with pytest.raises(ShapeError, match="bilinear"):
        F.bilinear(dj.zeros(2, 3), dj.zeros(2, 2), dj.zeros(4, 2, 2))


def test_layers_in_a_static_graph_equal_eager():
    x = r(2, 6, 3, 3).astype(np.float32)
    for layer in (nn.LocalResponseNorm(3), nn.ChannelShuffle(3), nn.RMSNorm(3)):
        eager = layer(dj.tensor(x)).numpy()
        with dj.Graph() as g:
            p = dj.placeholder((None, 6, 3, 3))
            out = layer(p)
        np.testing.assert_allclose(dj.Session(g, optimize=2).run(out, {p: x}), eager, rtol=1e-6)
