"""Static graphs and dj.jit on a device, through the fake "cuda" backend (tests/fake_cuda.py):
programs run where their Variables live (else where their feeds live), at every optimization
level, without a single device-to-host copy, and agree with the same program on the CPU."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from fake_cuda import CArray, fake_cuda, host, no_host

import dongjing as dj
from dongjing import nn
from dongjing.errors import DeviceError
from dongjing.nn import functional as F

LEVELS = [0, 1, 2]
pytestmark = pytest.mark.skipif(dj.cuda.is_available(), reason="a real GPU owns 'cuda' here: "
                                "tests/gpu checks these paths on it")


@contextlib.contextmanager
def _nothing():
    yield


@pytest.fixture
def cuda():
    with fake_cuda() as backend:
        yield backend


def _mlp_graph(device):
    """A two-layer MLP training graph (SGD via optimizer.minimize) with Variables on `device`."""
    rng = np.random.default_rng(0)
    w1 = dj.Variable(rng.standard_normal((6, 8)).astype(np.float32) * 0.3, device=device)
    b1 = dj.Variable(np.zeros(8, np.float32), device=device)
    w2 = dj.Variable(rng.standard_normal((8, 3)).astype(np.float32) * 0.3, device=device)
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, shape=(None, 6))
        y = dj.placeholder(dj.int64, shape=(None,))
        h = dj.tanh(dj.matmul(x, w1) + b1)
        loss = F.cross_entropy(dj.matmul(h, w2), y)
        train = dj.optim.SGD([w1, b1, w2], lr=0.1, momentum=0.9).minimize(loss)
    return g, x, y, loss, train, (w1, b1, w2)


@pytest.mark.parametrize("level", LEVELS)
def test_a_training_graph_runs_where_its_variables_live(cuda, level):
    rng = np.random.default_rng(1)
    xs, ys = rng.standard_normal((5, 6)).astype(np.float32), rng.integers(0, 3, 5)
    results = {}
    for device in ("cpu", "cuda"):
        g, x, y, loss, train, params = _mlp_graph(device)
        losses = []
        with dj.Session(g, optimize=level) as sess:
            for step in range(3):
                feed = {x: xs, y: ys} if step != 1 else {x: dj.tensor(xs, device=device),
                                                         y: dj.tensor(ys, device=device)}
                if device == "cuda":  # compiling may read constants; a run never copies
                    with no_host(cuda) if step else _nothing():
                        value, _ = sess.run([loss, train], feed)
                    assert type(value) is CArray
                    value = value.a
                else:
                    value, _ = sess.run([loss, train], feed)
                losses.append(float(value))
        results[device] = (losses, [host(p) for p in params])
        if device == "cuda":
            assert all(type(p._data) is CArray for p in params)
    np.testing.assert_allclose(results["cuda"][0], results["cpu"][0], rtol=1e-6)
    for a, b in zip(results["cuda"][1], results["cpu"][1]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("level", LEVELS)
def test_a_graph_without_variables_runs_where_its_feeds_live(cuda, level):
    g = dj.Graph()
    with g.as_default():
        a = dj.placeholder(dj.float32, shape=(4,))
        out = dj.exp(a * 2.0 + 1.0).sum() + dj.constant(np.float32(3.0))
    data = np.arange(4, dtype=np.float32)
    want = np.exp(data * 2.0 + 1.0).sum() + 3.0
    with dj.Session(g, optimize=level) as sess:
        on_host = sess.run(out, {a: data})
        assert type(on_host) is not CArray
        with no_host(cuda):
            on_device = sess.run(out, {a: cuda.asarray(data)})
        assert type(on_device) is CArray
        assert type(sess.run(out, {a: data})) is not CArray  # host feeds: the CPU again
    np.testing.assert_allclose([float(on_host), float(on_device.a)], [want, want], rtol=1e-6)


def test_mixing_devices_in_a_graph_is_an_error(cuda):
    v_cpu = dj.Variable(np.ones((2, 2), np.float32))
    v_gpu = dj.Variable(np.ones((2, 2), np.float32), device="cuda")
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, shape=(2, 2))
        on_cpu = dj.matmul(x, v_cpu)
        both = on_cpu + v_gpu
    with dj.Session(g) as sess:
        with pytest.raises(DeviceError, match="an input lives on cuda:0 but the Variables it "
                                              "reads live on cpu"):
            sess.run(on_cpu, {x: dj.ones(2, 2, device="cuda")})
        sess.run(on_cpu, {x: np.ones((2, 2), np.float32)})
        with pytest.raises(DeviceError, match=r"feed for placeholder .* lives on cuda:0, but "
                                              r"this program runs on cpu"):
            sess.run(on_cpu, {x: dj.ones(2, 2, device="cuda")})
        with pytest.raises(DeviceError, match="lives on cpu and .* on cuda:0"):
            sess.run(both, {x: np.ones((2, 2), np.float32)})
    with pytest.raises(DeviceError, match="Variables it reads live on cpu"), \
            dj.Session(g, device="cuda") as sess:
        sess.run(on_cpu, {x: np.ones((2, 2), np.float32)})


@pytest.mark.parametrize("level", LEVELS)
def test_variables_moved_after_the_first_run_move_the_program(cuda, level):
    v = dj.Variable(np.full((2, 2), 2.0, np.float32))
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, shape=(2, 2))
        y = dj.matmul(x, v)
    with dj.Session(g, optimize=level) as sess:
        assert type(sess.run(y, {x: np.ones((2, 2), np.float32)})) is np.ndarray
        v._data = cuda.asarray(v._data)
        with no_host(cuda):
            moved = sess.run(y, {x: np.ones((2, 2), np.float32)})
    assert type(moved) is CArray and np.array_equal(moved.a, np.full((2, 2), 4.0))


@pytest.mark.parametrize("level", LEVELS)
def test_a_while_loop_runs_on_the_device(cuda, level):
    v = dj.Variable(np.float32(1.5), device="cuda")
    g = dj.Graph()
    with g.as_default():
        n = dj.placeholder(dj.int64, shape=())
        _, total = dj.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s * v),
                                 (dj.constant(np.int64(0)), dj.constant(np.float32(1.0))))
    with dj.Session(g, optimize=level) as sess:
        out = sess.run(total, {n: np.int64(3)})
    assert type(out) is CArray and float(out.a) == pytest.approx(1.5 ** 3)


def _rnn_while(device, inits, xs, level):
    """Loss and parameter gradients of a tanh RNN written as one `while_loop` (W6's form)."""
    steps, batch, _ = xs.shape
    params = [dj.Variable(p.copy(), device=device) for p in inits]
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, shape=xs.shape)
        n = dj.placeholder(dj.int64, shape=())
        h0 = dj.constant(np.zeros((batch, inits[1].shape[0]), np.float32))
        _, h = dj.while_loop(
            lambda t, h: t < n,
            lambda t, h: (t + 1, dj.tanh(x[t] @ params[0] + h @ params[1] + params[2])),
            [dj.constant(np.int64(0)), h0])
        loss = h.sum()
        fetches = [loss, *dj.gradients(loss, params)]
    with dj.Session(g, optimize=level) as sess:
        return sess.run(fetches, {x: xs, n: np.int64(steps)})


@pytest.mark.parametrize("level", LEVELS)
def test_a_while_loop_rnn_and_its_gradient_stay_on_the_device(cuda, level):
    """W6's shape: the loop values (a host constant's initial state included) and the stacks
    the gradient loop reads live on the device (the strict fake refuses host arrays; found on
    an H200, where cuBLAS was handed a NumPy array)."""
    rng = np.random.default_rng(3)
    steps, batch, dim, hidden = 4, 3, 2, 5
    xs = rng.standard_normal((steps, batch, dim)).astype(np.float32)
    inits = [(rng.standard_normal(s) * 0.3).astype(np.float32)
             for s in [(dim, hidden), (hidden, hidden), (hidden,)]]
    results = {device: _rnn_while(device, inits, xs, level) for device in ("cpu", "cuda")}
    assert all(type(r) is CArray for r in results["cuda"])
    for want, got in zip(results["cpu"], results["cuda"]):
        np.testing.assert_allclose(got.a, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("level", LEVELS)
def test_jit_runs_on_the_device_of_its_inputs_and_parameters(cuda, level):
    def build(device):
        dj.manual_seed(0)
        return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2)).to(device)

    rng = np.random.default_rng(2)
    x0, t0 = rng.standard_normal((4, 5)).astype(np.float32), rng.integers(0, 2, 4)
    grads = {}
    for device in ("cpu", "cuda"):
        model = build(device)
        fast = dj.jit(model, optimize=level)
        x, t = dj.tensor(x0, device=device), dj.tensor(t0, device=device)
        for _ in range(2):  # the second call reuses the trace
            model.zero_grad()
            if device == "cuda":
                with no_host(cuda):
                    loss = F.cross_entropy(fast(x), t)
                    loss.backward()
                assert type(loss._data) is CArray
            else:
                loss = F.cross_entropy(fast(x), t)
                loss.backward()
        grads[device] = [host(p.grad) for p in model.parameters()]
    for a, b in zip(grads["cuda"], grads["cpu"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_jit_retraces_for_another_device_and_says_so(cuda):
    f = dj.jit(lambda a: (a * 2.0).sum())
    assert float(f(dj.ones(3))) == 6.0
    out = f(dj.ones(3, device="cuda"))
    assert out.is_cuda and float(host(out)) == 6.0
    assert "device cpu -> cuda:0" in f.retrace_reasons[-1]
    model = nn.Linear(3, 1)
    fast = dj.jit(model)
    fast(dj.ones(2, 3))
    model.to("cuda")
    with pytest.raises(DeviceError, match="live on cuda:0"):
        fast(dj.ones(2, 3))


def test_a_device_program_shows_its_backend_in_the_source(cuda):
    v = dj.Variable(np.ones((3, 3), np.float32), device="cuda")
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, shape=(3, 3))
        y = dj.relu(dj.matmul(x, v) * 2.0 - 1.0).sum(0)
    with dj.Session(g) as sess:
        out = sess.run(y, {x: np.ones((3, 3), np.float32)})
        program = next(iter(sess._runs.values())).program
        assert sess.program(y) is program  # placed as a run would be: on the Variables' device
    assert type(out) is CArray and np.allclose(out.a, 15.0)
    assert program.backend is cuda and "numba" not in program.source


@pytest.mark.parametrize("level", LEVELS)
def test_an_unrolled_recurrence_and_its_gradient_on_the_device(cuda, level):
    """W5's shape of program: at O2 its per-step products are batched through concats, which a
    device program computes by slice copies (capturable on a GPU)."""
    rng = np.random.default_rng(4)
    steps, batch, dim, hidden = 6, 3, 4, 5
    x0 = rng.standard_normal((steps, batch, dim)).astype(np.float32)
    inits = [(rng.standard_normal(s) * 0.3).astype(np.float32)
             for s in [(dim, hidden), (hidden, hidden), (hidden,)]]
    results = {}
    for device in ("cpu", "cuda"):
        w_xh, w_hh, b = [dj.Variable(v, device=device) for v in inits]
        g = dj.Graph()
        with g.as_default():
            x = dj.placeholder(dj.float32, shape=(steps, batch, dim))
            h = dj.constant(np.zeros((batch, hidden), np.float32))
            for t in range(steps):
                h = dj.tanh(x[t] @ w_xh + h @ w_hh + b)
            loss = h.sum()
            grads = dj.gradients(loss, [w_xh, w_hh, b])
        with dj.Session(g, optimize=level) as sess:
            sess.run([loss, *grads], {x: x0})
            with no_host(cuda) if device == "cuda" else _nothing():
                values = sess.run([loss, *grads], {x: x0})
        results[device] = [v.a if type(v) is CArray else np.asarray(v) for v in values]
    for got, want in zip(results["cuda"], results["cpu"]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("level", LEVELS)
def test_a_device_constant_places_the_program_as_a_variable_does(cuda, level):
    # it ran on the CPU (no Variables, host feeds) and NumPy met the device array: a raw
    # TypeError; now the host feed is copied to the constant's device
    c = dj.tensor(np.arange(3.0, dtype=np.float32), device="cuda")
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, [3])
        y = (x * c).sum()
    out = dj.Session(g, optimize=level).run(y, {x: np.ones(3, np.float32)})
    assert isinstance(out, CArray)
    assert float(out.a) == 3.0
    w = dj.Variable(np.ones(3, np.float32))  # on the CPU: state on two devices is refused
    with g.as_default():
        z = (w * c).sum()
    with pytest.raises(DeviceError, match="lives on cpu and .* on cuda:0|lives on cuda:0 and"):
        dj.Session(g, optimize=level).run(z, {x: np.ones(3, np.float32)})
