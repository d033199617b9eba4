"""Training on the GPU: the digits MLP and CNN reach the CPU's losses and accuracy, optimizer
steps stay on the device, and static graphs either match eager results or refuse GPU state with
a clear error (compiled GPU graphs are not built yet)."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_helpers import host, on_gpu

import dongjing as dj
from dongjing import nn
from dongjing.errors import DeviceError
from dongjing.nn import functional as F


def _digits():
    pytest.importorskip("sklearn")
    return dj.data.datasets.digits()


class _CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                                      nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 2 * 2, 10))

    def forward(self, x):
        return self.classifier(self.features(x.reshape(-1, 1, 8, 8)))


def _build(name: str) -> nn.Module:
    dj.manual_seed(0)
    if name == "mlp":  # W1: 64-256-256-10
        return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                             nn.Linear(256, 10))
    return _CNN()


def _train(name: str, device: str, train, test, epochs: int = 3):
    """(losses, test accuracy) of SGD with momentum over the same shuffled batches."""
    model = _build(name).to(device)
    opt = dj.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x_all, y_all = train.tensors
    order_rng = np.random.default_rng(0)
    losses = []
    for _ in range(epochs):
        order = order_rng.permutation(len(y_all))
        for start in range(0, len(order), 64):
            idx = dj.tensor(order[start:start + 64])
            x, y = x_all[idx].to(device), y_all[idx].to(device)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    x_test, y_test = test.tensors
    logits = model.eval()(x_test.to(device))
    assert logits.device.type == device.partition(":")[0]
    accuracy = float((host(logits).argmax(1) == y_test.numpy()).mean())
    return np.array(losses), accuracy


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_digits_on_gpu_learns_like_on_cpu(name):
    train, test = _digits()
    cpu_losses, cpu_acc = _train(name, "cpu", train, test)
    gpu_losses, gpu_acc = _train(name, "cuda", train, test)
    # the first steps agree closely; later ones drift only by float32 summation order
    np.testing.assert_allclose(gpu_losses[:10], cpu_losses[:10], rtol=1e-3, atol=1e-5)
    assert abs(gpu_losses[-20:].mean() - cpu_losses[-20:].mean()) < 0.05
    assert gpu_acc >= (0.95 if name == "mlp" else 0.9)
    assert abs(gpu_acc - cpu_acc) <= 3 / 360


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "adamw", "rmsprop", "adagrad",
                                       "adadelta"])
def test_an_optimizer_step_stays_on_the_gpu(cuda, optimizer):
    make = {"sgd": lambda p: dj.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
            "adam": lambda p: dj.optim.Adam(p, lr=0.01, amsgrad=True),
            "adamw": lambda p: dj.optim.AdamW(p, lr=0.01),
            "rmsprop": lambda p: dj.optim.RMSprop(p, lr=0.01, centered=True, momentum=0.5),
            "adagrad": lambda p: dj.optim.Adagrad(p, lr=0.1, lr_decay=0.01),
            "adadelta": lambda p: dj.optim.Adadelta(p)}

    def run(device):
        dj.manual_seed(0)
        model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2)).to(device)
        opt = make[optimizer](model.parameters())
        x, y = dj.randn(9, 5), dj.randn(9, 2)
        x, y = x.to(device), y.to(device)
        for _ in range(3):
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            if device == "cpu":
                loss.backward()
                opt.step()
            else:
                saved = cuda.to_numpy_fn
                cuda.to_numpy_fn = _refuse  # no device-to-host copy inside a step
                try:
                    loss.backward()
                    opt.step()
                finally:
                    cuda.to_numpy_fn = saved
        return model, opt

    cpu_model, _ = run("cpu")
    gpu_model, opt = run("cuda")
    for p_cpu, p_gpu in zip(cpu_model.parameters(), gpu_model.parameters()):
        assert on_gpu(p_gpu) and all(on_gpu(v) for v in opt.state[p_gpu].values())
        np.testing.assert_allclose(host(p_gpu), p_cpu.numpy(), rtol=1e-4, atol=1e-6)


def _refuse(array):
    raise AssertionError("a device array was copied to the host during a training step")


def test_hooks_and_in_place_checks_on_gpu():
    x = dj.randn(4, device="cuda", requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.device) or g * 2.0)
    (x * x).sum().backward()
    assert seen == [dj.device("cuda", 0)] and on_gpu(x.grad)
    np.testing.assert_allclose(host(x.grad), 4.0 * host(x), rtol=1e-6)
    y = x * 1.0
    z = y * y
    with dj.no_grad():
        y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def _graph_and_eager(level: int):
    """The same computation as a static graph (CPU) and eagerly on the GPU."""
    rng = np.random.default_rng(0)
    w0, x0 = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((5, 4))
    x0 = x0.astype(np.float32)
    eager = dj.tanh(dj.tensor(x0, device="cuda") @ dj.tensor(w0, device="cuda")).sum(1)
    w = dj.Variable(w0)
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, shape=(None, 4))
        y = dj.tanh(dj.matmul(x, w)).sum(1)
    with dj.Session(g, optimize=level) as sess:
        static = sess.run(y, {x: x0})
        with pytest.raises(DeviceError, match="compiled GPU graphs are not built"):
            sess.run(y, {x: dj.tensor(x0, device="cuda")})
    w._data = w.cuda()._data  # GPU state in a graph: refused, never copied to the host
    with dj.Session(g, optimize=level) as sess, pytest.raises(DeviceError, match="cuda:0"):
        sess.run(y, {x: x0})
    return static, eager


@pytest.mark.parametrize("level", [0, 1, 2])
def test_static_matches_eager_gpu_and_refuses_gpu_state(level):
    static, eager = _graph_and_eager(level)
    assert on_gpu(eager)
    np.testing.assert_allclose(static, host(eager), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("level", [0, 1, 2])
def test_jit_refuses_gpu_inputs(level):
    f = dj.jit(lambda a: (a * 2.0).sum(), optimize=level)
    assert float(f(dj.ones(3))) == 6.0
    with pytest.raises(DeviceError, match="compiled GPU graphs are not built"):
        f(dj.ones(3, device="cuda"))
