"""The names PyTorch code imports: devices, dongjing.utils.data, dongjing.autograd.Variable,
dongjing.nn.init, dj.save/dj.load of state dicts."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
from dongjing.errors import DeviceError, DongjingError

FACTORIES = [
    lambda d: dj.tensor([1.0], device=d), lambda d: dj.zeros(2, device=d),
    lambda d: dj.ones(2, device=d), lambda d: dj.empty(2, device=d),
    lambda d: dj.full((2,), 3.0, device=d), lambda d: dj.zeros_like(dj.ones(2), device=d),
    lambda d: dj.ones_like(dj.ones(2), device=d), lambda d: dj.arange(3, device=d),
    lambda d: dj.linspace(0, 1, 3, device=d), lambda d: dj.eye(2, device=d),
    lambda d: dj.rand(2, device=d), lambda d: dj.randn(2, device=d),
    lambda d: dj.randint(0, 5, (2,), device=d), lambda d: dj.randperm(3, device=d),
    lambda d: dj.full_like(dj.ones(2), 1.0, device=d),
]


def test_devices():
    cpu = dj.device("cpu")
    assert cpu == "cpu" and str(cpu) == "cpu" and dj.device("cpu:0").index == 0
    assert dj.ones(1).device == cpu and not dj.ones(1).is_cuda
    assert dj.cuda.is_available() is False and dj.cuda.device_count() == 0
    with pytest.raises(DeviceError, match="no cuda backend"):
        dj.device("cuda")
    assert issubclass(DeviceError, DongjingError)
    for make in FACTORIES:
        assert make("cpu").device == cpu and make(cpu).device == cpu
        with pytest.raises(DeviceError, match="cuda"):
            make("cuda:0")
    with pytest.raises(DeviceError):
        dj.zeros(2, device=0)


def test_tensor_to_forms():
    t = dj.ones(2)
    assert t.to("cpu") is t and t.cpu() is t and t.to(dj.device("cpu")) is t
    assert t.to("cpu", dj.float64).dtype == dj.float64
    assert t.to(device="cpu", dtype=dj.int64).dtype == dj.int64
    assert t.to(dj.zeros(1, dtype=dj.float64)).dtype == dj.float64
    assert t.to("cpu", copy=True) is not t
    with pytest.raises(TypeError, match="None"):
        t.to(None)
    with pytest.raises(TypeError, match="neither a dtype nor a device"):
        t.to("banana")
    with pytest.raises(TypeError, match="unexpected keyword"):
        t.to("cpu", blocking=True)
    with pytest.raises(DeviceError):
        t.to("cuda")
    with pytest.raises(DeviceError):
        t.cuda()


def test_module_to_device_and_dtype():
    model = nn.Linear(2, 3)
    weight = model.weight
    assert model.to("cpu") is model and model.to(dj.device("cpu")).weight is weight
    model.to("cpu", dj.float64)
    assert model.weight is weight and weight.dtype == dj.float64
    with pytest.raises(TypeError, match="floating point"):
        model.to(dj.int64)
    with pytest.raises(DeviceError):
        model.to("cuda")
    with pytest.raises(DeviceError):
        model.cuda()


def test_utils_data_namespace():
    from dongjing.utils.data import (
        ConcatDataset,
        DataLoader,
        Dataset,
        Subset,
        TensorDataset,
        random_split,
    )

    assert Dataset is dj.data.Dataset
    ds = TensorDataset(np.arange(10, dtype=np.float32)[:, None], np.arange(10))
    dj.manual_seed(3)
    a, b = random_split(ds, [0.7, 0.3])
    dj.manual_seed(3)
    a2, _ = random_split(ds, [7, 3])
    assert len(a) == 7 and len(b) == 3 and a.indices == a2.indices
    assert sorted(a.indices + b.indices) == list(range(10))
    with pytest.raises(ValueError, match="summing"):
        random_split(ds, [4, 4])
    sub = Subset(ds, [5, 2, 7])
    xs = [x.numpy().ravel().tolist() for x, _ in DataLoader(sub, batch_size=2, num_workers=2)]
    assert xs == [[5.0, 2.0], [7.0]]
    both = ConcatDataset([sub, ds])
    assert len(both) == 13 and int(both[3][1].item()) == 0 and int(both[-1][1].item()) == 9


def test_legacy_autograd_variable_is_a_tensor_not_a_graph_variable():
    from dongjing.autograd import Variable

    t = dj.ones(2)
    assert Variable(t) is t
    v = Variable(t, requires_grad=True)
    assert type(v) is dj.Tensor and v.requires_grad and v.is_leaf
    assert not isinstance(v, dj.Variable)
    (v * 3).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [3, 3])
    assert Variable([1.0, 2.0]).shape == (2,)
    with pytest.warns(UserWarning, match="volatile"):
        Variable(t, volatile=True)


def test_init_functions():
    from dongjing.nn import init

    dj.manual_seed(0)
    w = nn.Parameter(np.empty((400, 300), np.float32))
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert w.numpy().std() == pytest.approx(np.sqrt(2 / 400), rel=0.02)
    init.xavier_normal_(w, gain=init.calculate_gain("tanh"))
    assert w.numpy().std() == pytest.approx(5 / 3 * np.sqrt(2 / 700), rel=0.02)
    q = nn.Parameter(np.empty((3, 5), np.float32))
    init.orthogonal_(q)
    np.testing.assert_allclose(q.numpy() @ q.numpy().T, np.eye(3), atol=1e-5)
    init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    assert np.abs(w.numpy()).max() <= 0.5
    init.constant_(q, 0.25)
    assert np.all(q.numpy() == 0.25)
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(np.sqrt(2 / 1.04))


def test_save_load_state_dicts_of_recurrent_models(tmp_path):
    model = nn.Sequential(nn.Embedding(5, 3), nn.GRU(3, 4, num_layers=2, bidirectional=True))
    opt = dj.optim.Adagrad(model.parameters())
    out, _ = model(dj.tensor([[1, 2], [3, 4]]))
    out.sum().backward()
    opt.step()
    dj.save({"model": model.state_dict(), "opt": opt.state_dict()}, tmp_path / "ckpt.dj")
    loaded = dj.load(tmp_path / "ckpt.dj")
    fresh = nn.Sequential(nn.Embedding(5, 3), nn.GRU(3, 4, num_layers=2, bidirectional=True))
    fresh.load_state_dict(loaded["model"])
    for (name, p), q in zip(model.named_parameters(), fresh.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=name)
    opt2 = dj.optim.Adagrad(fresh.parameters())
    opt2.load_state_dict(loaded["opt"])
    first = next(iter(fresh.parameters()))
    np.testing.assert_array_equal(opt2.state[first]["sum"].numpy(),
                                  opt.state[next(iter(model.parameters()))]["sum"].numpy())
