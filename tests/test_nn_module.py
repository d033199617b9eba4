"""dj.nn.Module: registration, walking, state dicts, modes, repr, PyTorch shapes and init."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
from dongjing.errors import StateDictError


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        self.norm = nn.BatchNorm1d(3)
        self.scale = nn.Parameter(dj.ones(1))
        self.note = "not state"

    def forward(self, x):
        return self.norm(self.body(x)) * self.scale


def test_registration_and_names():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["scale", "body.0.weight", "body.0.bias", "body.2.weight", "body.2.bias",
                     "norm.weight", "norm.bias"]
    assert len(list(net.parameters())) == 7
    assert [type(m).__name__ for m in net.children()] == ["Sequential", "BatchNorm1d"]
    assert len(list(net.modules())) == 6
    assert list(net.state_dict()) == names + ["norm.running_mean", "norm.running_var",
                                              "norm.num_batches_tracked"]
    assert isinstance(net.scale, dj.Variable) and net.scale.requires_grad
    assert not net.norm.running_mean.trainable


def test_shared_parameter_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2


def test_linear_shapes_and_default_init():
    dj.manual_seed(0)
    lin = nn.Linear(100, 30)
    assert lin.weight.shape == (30, 100) and lin.bias.shape == (30,)
    bound = 1 / math.sqrt(100)
    w = lin.weight.numpy()
    assert w.dtype == np.float32
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(w.mean()) < 0.01
    x = dj.randn(5, 100)
    np.testing.assert_allclose(lin(x).numpy(), x.numpy() @ w.T + lin.bias.numpy(), rtol=1e-5,
                               atol=1e-6)


def test_manual_seed_makes_init_repeatable():
    dj.manual_seed(3)
    a = nn.Linear(3, 3).weight.numpy().copy()
    dj.manual_seed(3)
    b = nn.Linear(3, 3).weight.numpy()
    np.testing.assert_array_equal(a, b)


def test_state_dict_round_trip_in_place():
    src, dst = Net(), Net()
    src.norm.running_mean.data[:] = 7.0
    weight = dst.body[0].weight
    dst.load_state_dict(src.state_dict())
    assert dst.body[0].weight is weight  # copied in place: optimizers keep their references
    for (k, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)


def test_load_state_dict_errors():
    net = Net()
    sd = {k: v.numpy() for k, v in net.state_dict().items()}
    missing = dict(sd)
    del missing["body.0.bias"]
    with pytest.raises(StateDictError, match=r"missing key\(s\): 'body.0.bias'"):
        net.load_state_dict(missing)
    with pytest.raises(StateDictError, match=r"unexpected key\(s\): 'extra'"):
        net.load_state_dict({**sd, "extra": np.zeros(1)})
    bad = dict(sd, **{"body.2.weight": np.zeros((3, 9), np.float32)})
    shapes = r"size mismatch for 'body.2.weight'.*\(3, 9\).*\(3, 8\)"
    with pytest.raises(StateDictError, match=shapes):
        net.load_state_dict(bad)
    before = net.body[0].weight.numpy().copy()
    bad["body.0.weight"] = np.zeros((8, 4), np.float32)
    with pytest.raises(StateDictError):
        net.load_state_dict(bad)
    np.testing.assert_array_equal(net.body[0].weight.numpy(), before)  # nothing half-loaded
    result = net.load_state_dict(missing, strict=False)
    assert result.missing_keys == ["body.0.bias"] and result.unexpected_keys == []


def test_train_eval_and_zero_grad():
    net = Net()
    assert net.training and net.body[1].training
    net.eval()
    assert not net.training and not net.norm.training
    net.train()
    out = net(dj.randn(5, 4)).sum()
    out.backward()
    assert net.body[0].weight.grad is not None
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_repr_like_pytorch():
    text = repr(nn.Sequential(nn.Linear(64, 10, bias=False), nn.ReLU()))
    assert text == ("Sequential(\n  (0): Linear(in_features=64, out_features=10, bias=False)\n"
                    "  (1): ReLU()\n)")


def test_module_list_and_errors():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3 and [n for n, _ in layers.named_parameters()][-1] == "2.bias"

    class Bad(nn.Module):
        def __init__(self):
            self.x = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match="super"):
        Bad()
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = layers.nope


def test_to_double_keeps_objects_and_gradchecks():
    lin = nn.Linear(3, 2)
    weight = lin.weight
    lin.double()
    assert lin.weight is weight and weight.dtype == dj.float64
    x = dj.tensor(np.random.default_rng(0).standard_normal((4, 3)), dtype=dj.float64,
                  requires_grad=True)
    assert dj.autograd.gradcheck(lambda x: dj.tanh(lin(x)), [x])


def test_graph_names_parameters_by_their_qualified_names():
    net = Net()
    with dj.Graph() as g:
        net(dj.placeholder((None, 4), name="x"))
    names = {n.name for n in g.variables()}
    assert {"body.0.weight", "norm.running_mean", "scale"} <= names


def test_module_dict():
    heads = nn.ModuleDict({"a": nn.Linear(2, 3), "b": nn.Linear(2, 1)})
    heads["c"] = nn.ReLU()
    assert list(heads) == ["a", "b", "c"] and "b" in heads and len(heads) == 3
    assert [k for k, _ in heads.named_parameters()] == ["a.weight", "a.bias", "b.weight",
                                                        "b.bias"]
    assert heads["b"](dj.ones(4, 2)).shape == (4, 1)
