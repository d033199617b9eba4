"""Devices on a machine without a GPU: a fake "cuda" backend (tests/fake_cuda.py, arrays that
NumPy refuses) stands in for CuPy, so factories, moves, modules, optimizers, device errors,
checkpoints and a small training run are checked through the same code paths a GPU takes."""

from __future__ import annotations

import numpy as np
import pytest
from fake_cuda import CArray, fake_cuda, host, no_host
from wrapped_backend import LeakError

import dongjing as dj
from dongjing import nn
from dongjing.errors import DeviceError


@pytest.fixture
def cuda():
    with fake_cuda() as backend:
        yield backend


def _on_cuda(t) -> bool:
    return type(t._data) is CArray and t.device == dj.device("cuda", 0) and t.is_cuda


FACTORIES = [
    lambda d: dj.zeros(2, 3, device=d), lambda d: dj.ones(2, device=d),
    lambda d: dj.empty(2, device=d), lambda d: dj.full((2,), 3.0, device=d),
    lambda d: dj.rand(2, device=d), lambda d: dj.randn(2, device=d),
    lambda d: dj.randint(0, 5, (3,), device=d), lambda d: dj.randperm(4, device=d),
    lambda d: dj.arange(4, device=d), lambda d: dj.linspace(0, 1, 3, device=d),
    lambda d: dj.eye(2, device=d), lambda d: dj.tensor([1.0, 2.0], device=d),
    lambda d: dj.zeros_like(dj.ones(2), device=d), lambda d: dj.ones_like(dj.ones(2), device=d),
    lambda d: dj.full_like(dj.ones(2), 4.0, device=d), lambda d: dj.ones(2).new_zeros(3, device=d),
]


def test_factories_create_on_the_device(cuda):
    for make in FACTORIES:
        for where in ("cuda", "cuda:0", dj.device("cuda"), 0):
            assert _on_cuda(make(where))
        assert type(make("cpu")._data) is np.ndarray
    np.testing.assert_array_equal(host(dj.arange(4, device="cuda")), np.arange(4))
    np.testing.assert_array_equal(host(dj.eye(2, device="cuda")), np.eye(2, dtype=np.float32))
    x = dj.ones(2, 2, device="cuda", dtype=dj.float64)
    assert _on_cuda(dj.zeros_like(x)) and dj.zeros_like(x).dtype == dj.float64
    assert _on_cuda(x.new_ones(3)) and _on_cuda(dj.tensor(x)) and _on_cuda(dj.full_like(x, 1.0))
    assert type(dj.tensor(x, device="cpu")._data) is np.ndarray


def test_device_strings_are_validated(cuda):
    assert dj.device("cuda:0") == dj.device("cuda", 0) and str(dj.device("cuda")) == "cuda"
    with pytest.raises(DeviceError, match="out of range"):
        dj.device("cuda:1")
    with pytest.raises(DeviceError, match="invalid device string"):
        dj.device("cuda:x")
    with pytest.raises(DeviceError, match="non-negative"):
        dj.device("cuda", -1)
    with pytest.raises(DeviceError, match="not supported here"):  # modules build on the CPU
        nn.Conv1d(1, 1, 3, device="cuda")


def test_cuda_queries_and_seeds(cuda):
    assert dj.cuda.is_available() is False  # the fake is not CuPy
    assert dj.cuda.device_count() == 1 and dj.cuda.current_device() == 0
    dj.cuda.synchronize()
    dj.cuda.synchronize("cuda:0")
    assert cuda.syncs == [None, 0]
    dj.cuda.manual_seed(7)
    a = host(dj.rand(4, device="cuda"))
    dj.cuda.manual_seed(7)
    assert np.array_equal(a, host(dj.rand(4, device="cuda")))
    dj.manual_seed(3)
    b = host(dj.randn(4, device="cuda"))
    dj.manual_seed(3)
    assert np.array_equal(b, host(dj.randn(4, device="cuda")))


def test_no_cuda_backend_after_the_fake_is_gone():
    with fake_cuda():
        pass
    with pytest.raises(DeviceError, match="no cuda backend"):
        dj.device("cuda")
    with pytest.raises(DeviceError):
        dj.ones(2).cuda()
    with pytest.raises(DeviceError):
        dj.cuda.synchronize()
    assert dj.cuda.device_count() == 0


def test_to_cuda_cpu_round_trips(cuda):
    t = dj.tensor([[1.0, 2.0], [3.0, 4.0]])
    for moved in (t.to("cuda"), t.cuda(), t.cuda(0), t.to(dj.device("cuda:0")),
                  t.to(device="cuda"), t.to(dj.ones(1, device="cuda"))):
        assert _on_cuda(moved)
        back = moved.cpu()
        assert type(back._data) is np.ndarray and np.array_equal(back.numpy(), t.numpy())
        back.numpy()[0, 0] = 9.0  # a copy, not a view of the device data
        assert host(moved)[0, 0] == 1.0
    g = t.cuda()
    assert g.to("cuda") is g and g.cuda() is g and t.cpu() is t
    assert g.to("cuda", copy=True) is not g
    d = t.to("cuda", dj.float64)
    assert _on_cuda(d) and d.dtype == dj.float64
    assert t.to(dj.ones(1, device="cuda", dtype=dj.float64)).dtype == dj.float64
    i = dj.arange(3).cuda()
    assert _on_cuda(i.float()) and i.float().dtype == dj.float32


def test_a_move_is_on_the_tape(cuda):
    x = dj.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.cuda()
    assert type(y.grad_fn).__name__ == "ToCopyBackward0"
    (y * y).sum().backward()
    assert type(x.grad._data) is np.ndarray
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    w = dj.ones(3, device="cuda", requires_grad=True)
    (w.cpu() * 3.0).sum().backward()
    assert _on_cuda(w.grad) and np.allclose(host(w.grad), 3.0)


def test_numpy_refuses_a_device_tensor(cuda):
    t = dj.ones(2, device="cuda")
    with pytest.raises(DeviceError, match="can't convert cuda:0 device type tensor to numpy. "
                                          "Use Tensor.cpu()") as info:
        t.numpy()
    assert isinstance(info.value, TypeError)
    with pytest.raises(DeviceError, match="can't convert"):
        np.asarray(t)
    assert t.cpu().numpy().tolist() == [1.0, 1.0]
    assert t.tolist() == [1.0, 1.0] and (t.sum()).item() == 2.0
    assert "device='cuda:0'" in repr(t)


def test_mixing_devices_raises_before_any_work(cuda):
    g, c = dj.ones(2, 3, device="cuda"), dj.ones(2, 3)
    with pytest.raises(DeviceError, match=r"add: .*two devices, cuda:0 and cpu"):
        g + c
    with pytest.raises(DeviceError, match=r"matmul: .*cpu and cuda:0"):
        dj.matmul(dj.ones(2, 2), dj.ones(2, 2, device="cuda"))
    with pytest.raises(DeviceError, match="cat"):
        dj.cat([g, c])
    # CPU scalars mix, as in PyTorch: Python numbers and 0-d CPU tensors
    assert _on_cuda(g + 1.0) and _on_cuda(2.0 * g) and _on_cuda(g * dj.tensor(2.0))
    assert _on_cuda(dj.where(g > 0, g, 0.0))


def test_module_to_moves_parameters_and_buffers_in_place(cuda):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    weight, mean = model[0].weight, model[1].running_mean
    model(dj.randn(5, 3)).sum().backward()
    assert model.to("cuda") is model
    assert model[0].weight is weight and model[1].running_mean is mean
    assert all(_on_cuda(p) for p in model.parameters())
    assert all(_on_cuda(b) for b in model.buffers())
    assert _on_cuda(weight.grad)
    assert model.cpu() is model and type(weight._data) is np.ndarray
    model.cuda()
    model.to("cpu", dj.float64)
    assert type(weight._data) is np.ndarray and weight.dtype == dj.float64
    model.to(dj.device("cuda"), dj.float32)
    assert _on_cuda(weight) and weight.dtype == dj.float32
    state = {k: v.cpu() for k, v in model.state_dict().items()}
    model.load_state_dict(state)  # CPU values copied onto the device, as in PyTorch
    assert _on_cuda(weight)


def _train(device: str, optimizer: str, steps: int = 4, backend=None):
    """Losses of a small MLP trained on `device` (same initial weights and data everywhere)."""
    dj.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    x, y = dj.randn(16, 4), dj.randint(0, 3, (16,))
    model.to(device)
    x, y = x.to(device), y.to(device)
    make = {"sgd": lambda p: dj.optim.SGD(p, lr=0.1, momentum=0.9),
            "adam": lambda p: dj.optim.Adam(p, lr=0.05, amsgrad=True),
            "rmsprop": lambda p: dj.optim.RMSprop(p, lr=0.01, centered=True, momentum=0.5),
            "adagrad": lambda p: dj.optim.Adagrad(p, lr=0.1, initial_accumulator_value=0.1)}
    opt = make[optimizer](model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for _ in range(steps):
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        if backend is None:
            loss.backward()
            opt.step()
        else:
            with no_host(backend):  # the step never copies device data to the host
                loss.backward()
                opt.step()
        losses.append(loss.item())
    return losses, model, opt


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "rmsprop", "adagrad"])
def test_training_on_the_device_matches_the_cpu(cuda, optimizer):
    want, _, _ = _train("cpu", optimizer)
    got, model, opt = _train("cuda", optimizer, backend=cuda)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert want[-1] < want[0]
    for p in model.parameters():
        assert _on_cuda(p)
        assert all(_on_cuda(v) for v in opt.state[p].values())


def test_optimizer_state_follows_its_parameters(cuda):
    _, model, opt = _train("cpu", "adam", steps=1)
    model.cuda()
    x = dj.randn(2, 4, device="cuda")
    model(x).sum().backward()
    with no_host(cuda):
        opt.step()
    p = next(model.parameters())
    assert all(_on_cuda(v) for v in opt.state[p].values())
    saved = opt.state_dict()
    fresh = dj.optim.Adam(model.parameters(), lr=0.05, amsgrad=True)
    fresh.load_state_dict({"state": {k: {n: v.cpu() for n, v in s.items()}
                                     for k, s in saved["state"].items()},
                           "param_groups": saved["param_groups"]})
    assert all(_on_cuda(v) for v in fresh.state[p].values())


def test_checkpoints_store_host_data_and_load_where_asked(cuda, tmp_path):
    model = nn.Linear(3, 2).cuda()
    path = tmp_path / "model.dj"
    dj.save({"model": model.state_dict(), "step": 3}, path)
    on_cpu = dj.load(path)
    assert on_cpu["step"] == 3 and type(on_cpu["model"]["weight"]._data) is np.ndarray
    on_gpu = dj.load(path, map_location="cuda")
    assert _on_cuda(on_gpu["model"]["weight"])
    np.testing.assert_array_equal(host(on_gpu["model"]["bias"]), host(model.bias))
    assert type(dj.load(path, map_location=dj.device("cpu"))["model"]["bias"]._data) \
        is np.ndarray
    with pytest.raises(TypeError, match="map_location"):
        dj.load(path, map_location={"cuda:0": "cpu"})


def test_dlpack_keeps_the_device(cuda):
    raw = CArray(np.arange(3.0))
    t = dj.from_dlpack(raw)
    assert _on_cuda(t) and t.__dlpack_device__() == (2, 0)
    raw.a[0] = 7.0  # shares memory
    assert host(t)[0] == 7.0


def test_a_device_array_never_leaks_into_numpy(cuda):
    t = dj.ones(3, device="cuda")
    with pytest.raises((LeakError, TypeError)):
        np.add(t._data, 1.0)


def test_in_place_updates_and_initialisers_stay_on_the_device(cuda):
    w = dj.ones(3, device="cuda", requires_grad=True)
    (w * 2.0).sum().backward()
    with no_host(cuda):
        w.data.add_(w.grad, alpha=-0.25)
        w.data.mul_(4.0)
    assert _on_cuda(w) and np.allclose(host(w), 2.0)
    with dj.no_grad():
        w.fill_(3.0)
        assert np.allclose(host(w), 3.0)
        w.zero_()
        assert np.allclose(host(w), 0.0) and _on_cuda(w)
    nn.init.normal_(w)
    assert _on_cuda(w) and host(w).std() > 0
    with pytest.raises(DeviceError, match="two devices"):
        dj.ones(3).add_(dj.ones(3, device="cuda"))


def test_layers_run_and_train_on_the_device(cuda):
    dj.manual_seed(1)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Dropout(0.5), nn.ReLU())
    model.cuda()
    model(dj.randn(8, 3, device="cuda")).sum().backward()
    assert _on_cuda(model[1].running_mean) and int(model[1].num_batches_tracked) == 1
    nn.utils.clip_grad_norm_(model.parameters(), 0.1)
    nn.utils.clip_grad_value_(model.parameters(), 0.01)
    assert _on_cuda(model[0].weight.grad) and np.abs(host(model[0].weight.grad)).max() <= 0.01
    emb = nn.Embedding(5, 3).cuda()
    emb(dj.tensor([1, 2, 1], device="cuda")).sum().backward()
    np.testing.assert_allclose(host(emb.weight.grad)[:3, 0], [0.0, 2.0, 1.0])
    lstm = nn.LSTM(3, 4).cuda()
    out, (h, c) = lstm(dj.randn(5, 2, 3, device="cuda"))
    out.sum().backward()
    assert _on_cuda(out) and _on_cuda(h) and _on_cuda(lstm.weight_ih_l0.grad)


def test_parameters_and_variables_from_device_tensors(cuda):
    g = dj.randn(3, device="cuda")
    p = nn.Parameter(g)
    assert _on_cuda(p) and p.requires_grad and p._data is not g._data  # a copy, as to_array
    v = dj.Variable(g, trainable=False, dtype=dj.float64)
    assert _on_cuda(v) and v.dtype == dj.float64
    np.testing.assert_allclose(host(v), host(g), rtol=1e-6)
    assert _on_cuda(dj.Tensor(g))


def test_as_tensor_and_empty_like_follow_devices(cuda):
    g = dj.ones(2, device="cuda")
    assert dj.as_tensor(g) is g and _on_cuda(dj.empty_like(g))
    assert type(dj.empty_like(g, device="cpu")._data) is np.ndarray
    a = np.arange(3.0)
    assert _on_cuda(dj.as_tensor(a, device="cuda")) and dj.as_tensor(a).numpy() is a
    assert type(dj.as_tensor(g, device="cpu")._data) is np.ndarray


def test_torch_compat_composites_stay_on_the_device(cuda):
    v = dj.tensor([1.0, 2.0, 3.0], device="cuda")
    m = dj.tensor([[1.0, 2.0], [3.0, 4.0]], device="cuda")
    counts = dj.tensor([1, 0, 2], device="cuda")
    with no_host(cuda):
        results = [dj.diag(v), dj.diag(m), dj.repeat_interleave(v, 2),
                   dj.unique(dj.tensor([3, 1, 3], device="cuda"))]
        assert dj.allclose(v, v) and dj.equal(m, m)
    # counts decide the output's size: read on the host, as PyTorch synchronises for them
    results.append(dj.repeat_interleave(v, counts))
    assert all(_on_cuda(r) for r in results)
    assert host(results[0]).tolist() == [[1, 0, 0], [0, 2, 0], [0, 0, 3]]
    assert host(results[1]).tolist() == [1.0, 4.0]
    assert host(results[3]).tolist() == [1, 3]
    assert host(results[4]).tolist() == [1.0, 3.0, 3.0]
