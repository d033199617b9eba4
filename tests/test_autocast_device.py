"""Mixed precision on a device (issue 33, item 5), through the strict fake "cuda" backend
(tests/fake_cuda.py, which refuses host arrays where CuPy would): under `dj.autocast("cuda")`
products run in float16 on the device and losses in float32, the gradients reach float32
parameters on the device, and `dj.amp.GradScaler("cuda")` skips an overflowing step, in an
eager loop, under `dj.jit` and in a static graph, bit for bit, with no device-to-host copy of
a tensor inside a step (after a traced step's first call, which compiles)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from fake_cuda import CArray, fake_cuda, host, no_host

import dongjing as dj

F = dj.nn.functional
FACTORS = [1.0, float("inf"), 1.0, 1.0]
pytestmark = pytest.mark.skipif(dj.cuda.is_available(), reason="a real GPU owns 'cuda' here")


@pytest.fixture
def cuda():
    with fake_cuda() as backend:
        yield backend


def _model():
    dj.manual_seed(0)
    return dj.nn.Sequential(dj.nn.Linear(4, 8), dj.nn.ReLU(), dj.nn.Linear(8, 3)).to("cuda")


def _data():
    rng = np.random.default_rng(0)
    return ([rng.standard_normal((5, 4)).astype(np.float32) for _ in FACTORS],
            [rng.integers(0, 3, 5) for _ in FACTORS])


def test_products_run_in_float16_on_the_device_and_losses_in_float32(cuda):
    model = _model()
    x = dj.tensor(_data()[0][0], device="cuda")
    y = dj.tensor(_data()[1][0], device="cuda")
    with dj.autocast("cuda"):
        logits = model(x)
        assert logits.dtype == dj.float16 and isinstance(logits._data, CArray)
        assert F.softmax(logits, dim=-1).dtype == dj.float32  # on CUDA's float32 list
        loss = F.cross_entropy(logits, y)
        assert loss.dtype == dj.float32 and isinstance(loss._data, CArray)
    loss.backward()
    for p in model.parameters():
        assert p.grad.dtype == dj.float32 and isinstance(p.grad._data, CArray)
    # the first layer's product, emulated on the host in float16
    w, b = (host(t).astype(np.float16) for t in (model[0].weight, model[0].bias))
    want = _data()[0][0].astype(np.float16) @ w.T + b
    with dj.autocast("cuda"):
        got = host(model[0](x))
    np.testing.assert_array_equal(got, want)


def _step(model, opt, scaler, x, y, factor):
    opt.zero_grad()
    with dj.autocast("cuda"):
        loss = F.cross_entropy(model(x), y) * factor
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return loss


def _train(cuda, jit: bool):
    model = _model()
    opt = dj.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = dj.amp.GradScaler("cuda", init_scale=2.0 ** 4, growth_interval=2)
    step = dj.jit(_step) if jit else _step
    record = []
    for k, (x, y, f) in enumerate(zip(*_data(), FACTORS)):
        x, y, f = (dj.tensor(v, device="cuda") for v in (x, y, np.float32(f)))
        # the first call traces and compiles (constants are read on the host then, once)
        with no_host(cuda) if k or not jit else contextlib.nullcontext():
            loss = step(model, opt, scaler, x, y, f)
        record.append((host(loss).item(), scaler.get_scale()))
    return record, [host(p).copy() for p in model.parameters()]


def test_grad_scaler_skips_the_overflowing_step_eagerly_and_under_jit(cuda):
    eager = _train(cuda, jit=False)
    scales = [s for _, s in eager[0]]
    assert scales == [16.0, 8.0, 8.0, 16.0]  # halved at the inf, doubled after 2 good steps
    assert np.isinf(eager[0][1][0])
    jitted = _train(cuda, jit=True)
    assert [s for _, s in jitted[0]] == scales
    np.testing.assert_array_equal([v for v, _ in eager[0]], [v for v, _ in jitted[0]])
    for p, q in zip(eager[1], jitted[1]):
        np.testing.assert_array_equal(p, q)


@pytest.mark.parametrize("level", [0, 2])
def test_a_static_graph_under_autocast_on_the_device_equals_eager(cuda, level):
    model = _model()
    xs, ys = _data()
    params = list(model.parameters())
    with dj.autocast("cuda"):
        loss = F.cross_entropy(model(dj.tensor(xs[0], device="cuda")),
                               dj.tensor(ys[0], device="cuda"))
    loss.backward()
    eager = [host(loss)] + [host(p.grad) for p in params]
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, [None, 4])
        y = dj.placeholder(dj.int64, [None])
        with dj.autocast("cuda"):
            sym = F.cross_entropy(model(x), y)
        grads = dj.gradients(sym, params)
    session = dj.Session(g, optimize=level)
    got = session.run([sym, *grads], {x: dj.tensor(xs[0], device="cuda"),
                                      y: dj.tensor(ys[0], device="cuda")})
    for a, b in zip(eager, got):
        np.testing.assert_array_equal(a, host(b) if isinstance(b, dj.Tensor) else np.asarray(
            b.a if isinstance(b, CArray) else b))


def test_a_graph_of_placeholders_built_under_autocast_cuda_takes_cudas_lists(cuda):
    rng = np.random.default_rng(2)
    zv, yv = rng.standard_normal((5, 3)).astype(np.float16), rng.integers(0, 3, 5)
    z = dj.tensor(zv, device="cuda", requires_grad=True)
    with dj.autocast("cuda"):
        loss = F.cross_entropy(z, dj.tensor(yv, device="cuda"))  # float32 on CUDA's list
    loss.backward()
    g = dj.Graph()
    with g.as_default():
        zp, yp = dj.placeholder(dj.float16, [None, 3]), dj.placeholder(dj.int64, [None])
        with dj.autocast("cuda"):  # nothing here says where it runs but the region
            sym = F.cross_entropy(zp, yp)
        grad = dj.gradients(sym, [zp])[0]
    assert sym.dtype == dj.float32
    got = dj.Session(g).run([sym, grad], {zp: dj.tensor(zv, device="cuda"),
                                          yp: dj.tensor(yv, device="cuda")})
    np.testing.assert_array_equal(host(loss), got[0].a)
    np.testing.assert_array_equal(host(z.grad), got[1].a)


def test_16_bit_sums_on_the_device_accumulate_in_float32_as_on_the_cpu(cuda):
    gv = (np.random.default_rng(5).standard_normal((64, 3)) * 0.3).astype(np.float16)
    want = gv.astype(np.float32).sum(0).astype(np.float16)
    for device in ("cpu", "cuda"):
        b = dj.zeros(3, dtype=dj.float16, device=device, requires_grad=True)
        (dj.zeros(64, 3, dtype=dj.float16, device=device) + b).backward(
            dj.tensor(gv, device=device))
        np.testing.assert_array_equal(host(b.grad), want)
