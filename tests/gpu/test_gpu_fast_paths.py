"""The eager GPU fast paths with CuPy itself, against the general path bit for bit: cached device
scalars (CuPy's own promotion of a 0-d operand), in-place arithmetic written by CuPy's ufuncs,
and the optimizers' in-place steps on CuPy arrays (tests/test_device_fast_paths.py and
tests/test_optim_fused.py run the same on the fake device)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from gpu_helpers import host, on_gpu

import dongjing as dj
from dongjing import short_paths

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from test_device_fast_paths import _inplace_program  # noqa: E402
from test_optim_fused import CASES, _reference, _train  # noqa: E402


def test_inplace_arithmetic_on_the_gpu_equals_the_general_path():
    fast = _inplace_program("cuda")
    assert all(on_gpu(t) for t in fast)
    with short_paths.disabled():
        slow = _inplace_program("cuda")
    cpu = _inplace_program("cpu")
    for a, b, c in zip(fast, slow, cpu):
        a, b = host(a), host(b)
        assert a.dtype == b.dtype == c.dtype and a.tobytes() == b.tobytes()
        np.testing.assert_allclose(a, c.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", [dj.float16, dj.float32, dj.float64, dj.int32, dj.int64])
def test_scalars_beside_gpu_tensors_promote_as_on_the_cpu(dtype):
    values = np.array([1, 2, 3]).astype(dtype)
    for number in (2, 0.5, -1.25, True):
        for fn in (lambda t, v: t + v, lambda t, v: v * t, lambda t, v: t / v,
                   lambda t, v: dj.maximum(t, dj.tensor(v)) if isinstance(v, float) else t - v):
            gpu = fn(dj.tensor(values, device="cuda"), number)
            cpu = fn(dj.tensor(values), number)
            assert gpu.dtype == cpu.dtype, (dtype, number)
            np.testing.assert_allclose(host(gpu), cpu.numpy(), rtol=1e-3 if dtype == dj.float16
                                       else 1e-6)


@pytest.mark.parametrize("cls,hyper", CASES)
def test_fused_optimizer_steps_on_the_gpu_equal_the_rule(cls, hyper):
    fast, fast_state, _, _ = _train(cls, dj.float32, "cuda", **hyper)
    ref, ref_state, _, _ = _train(_reference(cls), dj.float32, "cuda", **hyper)
    for a, b in zip(fast, ref):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    for a, b in zip(fast_state, ref_state):
        for k in a:
            assert np.array_equal(a[k], b[k]), k


def test_eager_products_go_through_cublas_and_match_cupy():
    from dongjing.backends import for_device_type

    backend = for_device_type("cuda")
    cp = backend.xp
    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float64):
        a0 = rng.standard_normal((7, 5)).astype(dtype)
        b0 = rng.standard_normal((5, 3)).astype(dtype)
        a = dj.tensor(a0, device="cuda", requires_grad=True)
        b = dj.tensor(b0, device="cuda", requires_grad=True)
        out = a @ b
        (out * out).sum().backward()
        want = cp.matmul(cp.asarray(a0), cp.asarray(b0)).get()
        np.testing.assert_allclose(host(out), want, rtol=1e-6, atol=1e-6)
        g = 2 * want
        np.testing.assert_allclose(host(a.grad), g @ b0.T, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(host(b.grad), a0.T @ g, rtol=1e-5, atol=1e-5)
        # a transposed view, a batched and a 1-d product (the last two through cupy.matmul)
        np.testing.assert_allclose(host(dj.tensor(b0.T.copy(), device="cuda").T @
                                        dj.tensor(b0.T.copy(), device="cuda")),
                                   b0 @ b0.T, rtol=1e-5, atol=1e-5)
        batch = rng.standard_normal((2, 7, 5)).astype(dtype)
        np.testing.assert_allclose(host(dj.tensor(batch, device="cuda") @ b.detach()),
                                   batch @ b0, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(host(a.detach() @ dj.tensor(b0[:, 0].copy(), device="cuda")),
                                   a0 @ b0[:, 0], rtol=1e-5, atol=1e-5)
    assert backend.forwards["matmul"] is not cp.matmul  # cuBLAS loaded


def test_batched_products_through_cublas_match_numpy():
    rng = np.random.default_rng(6)
    w, cols = rng.standard_normal((6, 9)), rng.standard_normal((4, 9, 11))
    g = rng.standard_normal((4, 6, 11))
    for a, b in [(w, cols), (cols.transpose(0, 2, 1), w.T), (g, cols.transpose(0, 2, 1)),
                 (rng.standard_normal((8, 6, 9))[::2], cols)]:
        for dtype in (np.float32, np.float64):
            got = dj.tensor(a.astype(dtype), device="cuda") @ dj.tensor(b.astype(dtype),
                                                                        device="cuda")
            np.testing.assert_allclose(host(got), np.matmul(a, b).astype(dtype), rtol=1e-5,
                                       atol=1e-5)


def test_a_convnet_training_graph_is_captured_and_replayed():
    """W7's shape: conv2d lowers to batched products, which cuBLAS computes inside a capture."""
    from dongjing.nn import functional as F

    rng = np.random.default_rng(7)
    w = dj.Variable((rng.standard_normal((4, 1, 3, 3)) * 0.3).astype(np.float32), device="cuda")
    v = dj.Variable((rng.standard_normal((4 * 6 * 6, 3)) * 0.1).astype(np.float32),
                    device="cuda")
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, shape=(5, 1, 8, 8))
        y = dj.placeholder(dj.int64, shape=(5,))
        h = dj.flatten(dj.relu(F.conv2d(x, w)), 1)
        loss = F.cross_entropy(h @ v, y)
        train = dj.optim.SGD([w, v], lr=0.1).minimize(loss)
    xs = rng.standard_normal((5, 1, 8, 8)).astype(np.float32)
    ys = rng.integers(0, 3, 5)
    with dj.Session(g, optimize=2) as sess:
        losses = [float(sess.run([loss, train], {x: xs, y: ys})[0]) for _ in range(8)]
        program = next(iter(sess._runs.values())).program
    assert program.graphs.reason is None and program.graphs.replays > 0, program.graphs.reason
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
