"""Devices with CuPy: factories, moves, the DeviceErrors, .numpy(), checkpoints between devices,
DLPack with PyTorch and JAX on the GPU, seeds and synchronisation."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_helpers import host, on_gpu

import dongjing as dj
from dongjing import nn
from dongjing.errors import DeviceError


def test_cuda_queries(cuda):
    assert dj.cuda.is_available() and dj.cuda.device_count() >= 1
    assert dj.cuda.current_device() == 0
    dj.cuda.synchronize()
    dj.cuda.synchronize(0)
    with pytest.raises(DeviceError, match="out of range"):
        dj.device("cuda", dj.cuda.device_count())


def test_factories_and_moves():
    for t in (dj.zeros(2, 3, device="cuda"), dj.ones(2, device=0), dj.rand(3, device="cuda"),
              dj.randn(3, device="cuda"), dj.randint(0, 5, (3,), device="cuda"),
              dj.randperm(5, device="cuda"), dj.arange(4, device="cuda"),
              dj.linspace(0, 1, 3, device="cuda"), dj.eye(3, device="cuda"),
              dj.full((2,), 1.5, device="cuda"), dj.tensor([1.0, 2.0], device="cuda:0")):
        assert on_gpu(t) and t.is_cuda and t.device == dj.device("cuda", 0)
    assert sorted(host(dj.randperm(5, device="cuda")).tolist()) == [0, 1, 2, 3, 4]
    a = np.arange(6.0).reshape(2, 3)
    g = dj.tensor(a).cuda()
    assert on_gpu(g) and np.array_equal(g.cpu().numpy(), a)
    assert g.cuda() is g and on_gpu(g.to("cuda", dj.float32)) and g.to(dj.float32).is_cuda
    assert type(g.cpu()._data) is np.ndarray
    assert "device='cuda:0'" in repr(g)


def test_numpy_refuses_and_mixing_raises():
    g = dj.ones(2, 2, device="cuda")
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        g.numpy()
    with pytest.raises(DeviceError, match="add: .*cuda:0 and cpu"):
        g + dj.ones(2, 2)
    assert on_gpu(g + 1.0) and on_gpu(g * dj.tensor(2.0))
    assert g.sum().item() == 4.0 and g.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_seeds_repeat():
    dj.cuda.manual_seed(5)
    a = host(dj.rand(8, device="cuda"))
    dj.cuda.manual_seed(5)
    assert np.array_equal(a, host(dj.rand(8, device="cuda")))
    dj.manual_seed(5)
    b = host(dj.randn(8, device="cuda"))
    dj.manual_seed(5)
    assert np.array_equal(b, host(dj.randn(8, device="cuda")))


def test_module_and_checkpoint_move_between_devices(tmp_path):
    dj.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    weight = model[0].weight
    model.cuda()
    assert model[0].weight is weight and all(on_gpu(p) for p in model.parameters())
    opt = dj.optim.Adam(model.parameters(), lr=0.01)
    model(dj.randn(6, 4, device="cuda")).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.dj"
    dj.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
    on_cpu = dj.load(path)
    assert type(on_cpu["model"]["0.weight"]._data) is np.ndarray
    on_gpu_ckpt = dj.load(path, map_location="cuda")
    assert on_gpu(on_gpu_ckpt["model"]["0.weight"])
    cpu_model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    cpu_model.load_state_dict(on_gpu_ckpt["model"])  # GPU values into a CPU model
    for p, q in zip(cpu_model.parameters(), model.parameters()):
        assert type(p._data) is np.ndarray
        np.testing.assert_array_equal(p.numpy(), host(q))
    gpu_model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    gpu_model.cuda().load_state_dict(on_cpu["model"])  # CPU values into a GPU model
    gpu_opt = dj.optim.Adam(gpu_model.parameters(), lr=0.01)
    gpu_opt.load_state_dict(on_cpu["opt"])
    p = next(gpu_model.parameters())
    assert on_gpu(p) and all(on_gpu(v) for v in gpu_opt.state[p].values())
    x = dj.randn(3, 4)
    np.testing.assert_allclose(host(gpu_model.eval()(x.cuda())), cpu_model.eval()(x).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_dlpack_with_torch_on_the_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no GPU")
    g = dj.arange(4.0, device="cuda")
    tt = torch.from_dlpack(g)
    assert tt.is_cuda and tt.tolist() == [0.0, 1.0, 2.0, 3.0]
    tt[0] = 9.0  # shares memory: no copy
    dj.cuda.synchronize()
    assert host(g)[0] == 9.0
    back = dj.from_dlpack(torch.ones(3, device="cuda"))
    assert on_gpu(back) and host(back).tolist() == [1.0, 1.0, 1.0]


def test_dlpack_with_jax_on_the_gpu():
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX sees no GPU")
    import jax.numpy as jnp

    g = dj.from_dlpack(jnp.arange(3.0, dtype=jnp.float32))
    assert on_gpu(g) and host(g).tolist() == [0.0, 1.0, 2.0]
    j = jnp.from_dlpack(dj.ones(2, device="cuda"))
    assert "cuda" in str(j.devices()).lower() or "gpu" in str(j.devices()).lower()


def test_two_gpus():
    if dj.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    a = dj.ones(3, device="cuda:0")
    b = a.to("cuda:1")
    assert b.device == dj.device("cuda", 1) and host(b).tolist() == [1.0, 1.0, 1.0]
    assert (b * 2.0).device == dj.device("cuda", 1)
    with pytest.raises(DeviceError, match="cuda:0 and cuda:1"):
        a + b
