"""Training on the GPU: the digits MLP and CNN reach the CPU's losses and accuracy, optimizer
steps stay on the device, static graphs run on the GPU at every optimization level (fused CUDA
kernels, CUDA-graph replay) and agree with eager and CPU results, and dj.jit runs there too."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_helpers import host, on_gpu

import dongjing as dj
from dongjing import nn
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


def _mlp_graph(device: str, level: int):
    """W1's MLP as a static training graph with Variables on `device`; a step function."""
    rng = np.random.default_rng(0)
    sizes = [64, 256, 256, 10]
    params = []
    for i in range(3):
        params.append(dj.Variable((rng.standard_normal((sizes[i], sizes[i + 1])) *
                                   np.sqrt(2.0 / sizes[i])).astype(np.float32), device=device))
        params.append(dj.Variable(np.zeros(sizes[i + 1], np.float32), device=device))
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, shape=(64, 64))
        y = dj.placeholder(dj.int64, shape=(64,))
        h = x
        for i in range(3):
            h = dj.matmul(h, params[2 * i]) + params[2 * i + 1]
            h = dj.relu(h) if i < 2 else h
        loss = F.cross_entropy(h, y)
        opt = dj.optim.SGD(params, lr=0.05, momentum=0.9)
        train = opt.minimize(loss)
    sess = dj.Session(g, optimize=level)
    return sess, x, y, loss, train, params, opt


def _batches(n: int):
    rng = np.random.default_rng(1)
    return [(rng.standard_normal((64, 64)).astype(np.float32), rng.integers(0, 10, 64))
            for _ in range(n)]


@pytest.mark.parametrize("level", [0, 1, 2])
def test_static_training_on_the_gpu_matches_the_cpu(level):
    results = {}
    for device in ("cpu", "cuda"):
        sess, x, y, loss, train, params, opt = _mlp_graph(device, level)
        losses = [float(host_value(sess.run([loss, train], {x: xb, y: yb})[0]))
                  for xb, yb in _batches(12)]
        if device == "cuda":
            assert all(on_gpu(p) for p in params)
        results[device] = (losses, [host(p) for p in params])
    np.testing.assert_allclose(results["cuda"][0], results["cpu"][0], rtol=1e-4, atol=1e-5)
    for a, b in zip(results["cuda"][1], results["cpu"][1]):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


def host_value(value):
    return value.get() if hasattr(value, "get") else value


@pytest.mark.parametrize("level", [0, 1, 2])
def test_static_matches_eager_on_the_gpu(level):
    rng = np.random.default_rng(0)
    w0, x0 = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((5, 4))
    x0 = x0.astype(np.float32)
    eager = dj.tanh(dj.tensor(x0, device="cuda") @ dj.tensor(w0, device="cuda")).sum(1)
    w = dj.Variable(w0, device="cuda")
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, shape=(None, 4))
        y = dj.tanh(dj.matmul(x, w)).sum(1)
    with dj.Session(g, optimize=level) as sess:
        static = sess.run(y, {x: x0})
        fed_on_gpu = sess.run(y, {x: dj.tensor(x0, device="cuda")})
    assert type(static).__module__.startswith("cupy")
    np.testing.assert_allclose(static.get(), host(eager), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fed_on_gpu.get(), host(eager), rtol=1e-5, atol=1e-6)


def test_elementwise_chains_fuse_into_cuda_kernels():
    import cupy

    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, shape=(1 << 16,))
        u = x * 1.5 + 0.25
        out = dj.maximum(u, 0.0) * dj.tanh(u) + dj.exp(-u * u) * 0.5 - dj.sqrt(dj.abs(x))
    x0 = np.random.default_rng(0).standard_normal(1 << 16).astype(np.float32)
    x0[:4] = [np.nan, np.inf, -0.0, 0.0]
    want = None
    with dj.Session(g, optimize=0) as sess:
        want = sess.run(out, {x: cupy.asarray(x0)}).get()
    with dj.Session(g, optimize=2) as sess:
        got = sess.run(out, {x: cupy.asarray(x0)}).get()
        program = next(iter(sess._runs.values())).program
    assert "dj_fused_" in program.source and "ElementwiseKernel" in program.source
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, equal_nan=True)


def _elementwise_graph():
    """A training graph without products (CuPy refuses cuBLAS during capture): a per-element
    model tanh(x * w + b) fitted to y by SGD with momentum, Variables on the GPU."""
    rng = np.random.default_rng(0)
    w = dj.Variable(rng.standard_normal(4096).astype(np.float32), device="cuda")
    b = dj.Variable(np.zeros(4096, np.float32), device="cuda")
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, shape=(4096,))
        y = dj.placeholder(dj.float32, shape=(4096,))
        loss = ((dj.tanh(x * w + b) - y) ** 2).mean()
        opt = dj.optim.SGD([w, b], lr=0.5, momentum=0.9)
        train = opt.minimize(loss)
    return dj.Session(g), x, y, loss, train, [w, b], opt


def _elementwise_batches(n: int):
    rng = np.random.default_rng(1)
    return [(rng.standard_normal(4096).astype(np.float32),
             rng.standard_normal(4096).astype(np.float32) * 0.5) for _ in range(n)]


def _graph_of(kind: str):
    if kind == "mlp":  # products through cuBLAS directly (backends/cuda_gemm.py)
        return _mlp_graph("cuda", 2), _batches(10)
    return _elementwise_graph(), _elementwise_batches(10)


@pytest.mark.parametrize("kind", ["elementwise", "mlp"])
def test_cuda_graph_replay_matches_plain_execution(monkeypatch, kind):
    finals = {}
    for mode in ("1", "0"):
        monkeypatch.setenv("DONGJING_CUDA_GRAPHS", mode)
        (sess, x, y, loss, train, params, opt), batches = _graph_of(kind)
        losses = [float(host_value(sess.run([loss, train], {x: xb, y: yb})[0]))
                  for xb, yb in batches]
        graphs = next(iter(sess._runs.values())).program.graphs
        if mode == "1":
            assert graphs.reason is None, graphs.reason
            assert graphs.replays >= 6 and graphs.captures
            assert all(p._version[0] >= 10 for p in params)
        else:
            assert graphs.replays == 0
        finals[mode] = (losses, [host(p) for p in params])
    np.testing.assert_allclose(finals["1"][0], finals["0"][0], rtol=1e-5, atol=1e-6)
    for a, b in zip(finals["1"][1], finals["0"][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_products_through_cublas_match_cupy():
    import cupy

    from dongjing.backends import cuda_gemm, for_device_type

    gemm = cuda_gemm.for_backend(for_device_type("cuda"))
    assert gemm is not None
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64):
        a = cupy.asarray(rng.standard_normal((37, 19)).astype(dtype))
        b = cupy.asarray(rng.standard_normal((19, 23)).astype(dtype))
        for x, y in [(a, b), (cupy.ascontiguousarray(a.T).T, b), (a, cupy.ascontiguousarray(b.T).T),
                     (a[1:30], b[:, 2:20]), (a[::2], b)]:
            want = cupy.matmul(x, y)
            out = cupy.empty(want.shape, dtype)
            got = gemm(x, y, out)
            assert got is out
            tol = 1e-5 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(got.get(), want.get(), rtol=tol, atol=tol)


def test_a_replayed_graph_follows_a_changed_learning_rate_and_new_feeds():
    sess, x, y, loss, train, params, opt = _elementwise_graph()
    batches = _elementwise_batches(6)
    for xb, yb in batches[:4]:
        sess.run([loss, train], {x: xb, y: yb})
    graphs = next(iter(sess._runs.values())).program.graphs
    assert graphs.captures, graphs.reason
    before = host(params[0])
    for group in opt.param_groups:
        group["lr"] = 0.0  # read from a Variable on the GPU: the replay sees it
    sess.run([loss, train], {x: batches[4][0], y: batches[4][1]})
    np.testing.assert_array_equal(host(params[0]), before)
    assert graphs.replays >= 1


def test_a_replay_checks_its_labels_before_any_work():
    sess, x, y, loss, train, params, opt = _mlp_graph("cuda", 2)
    batches = _batches(4)
    for xb, yb in batches:
        sess.run([loss, train], {x: xb, y: yb})
    graphs = next(iter(sess._runs.values())).program.graphs
    assert graphs.captures, graphs.reason
    before = [host(p) for p in params]
    bad = batches[0][1].copy()
    bad[5] = 10
    with pytest.raises(dj.errors.ShapeError, match=r"class indices must lie in \[0, 10\)"):
        sess.run([loss, train], {x: batches[0][0], y: bad})
    for p, b in zip(params, before):
        np.testing.assert_array_equal(host(p), b)


def test_einsum_is_not_captured_and_says_why():
    w = dj.Variable(np.ones((8, 8), np.float32), device="cuda")
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, shape=(4, 8))
        out = dj.einsum("ij,jk->ik", x, w).sum()
    with dj.Session(g) as sess:
        for _ in range(4):
            value = sess.run(out, {x: np.ones((4, 8), np.float32)})
        graphs = next(iter(sess._runs.values())).program.graphs
    assert float(value.get()) == 256.0
    assert "cuBLAS" in graphs.reason and not graphs.captures


@pytest.mark.parametrize("level", [0, 2])
def test_jit_model_on_the_gpu_matches_eager(level):
    train, test = _digits()
    x_all, y_all = train.tensors
    grads = {}
    for mode in ("eager", "jit"):
        model = _build("mlp").to("cuda")
        run = dj.jit(model, optimize=level) if mode == "jit" else model
        for _ in range(2):
            model.zero_grad()
            loss = F.cross_entropy(run(x_all[:64].cuda()), y_all[:64].cuda())
            loss.backward()
        assert on_gpu(loss)
        grads[mode] = [host(p.grad) for p in model.parameters()]
    for a, b in zip(grads["jit"], grads["eager"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
