"""The eager device fast paths (found costly on an H200, issue 36) against the general path, on
the strict fake CUDA backend (tests/fake_cuda.py): a CPU scalar beside device tensors is copied
to the device once and reused; untracked in-place arithmetic on a device tensor writes straight
into its memory. Each gives the general path's bytes."""

from __future__ import annotations

import numpy as np
import pytest
from fake_cuda import CArray, fake_cuda

import dongjing as dj
from dongjing import short_paths

pytestmark = pytest.mark.skipif(dj.cuda.is_available(), reason="a real GPU owns 'cuda' here: "
                                "tests/gpu/test_gpu_fast_paths.py checks these paths on it")

@pytest.fixture
def cuda():
    with fake_cuda() as backend:
        yield backend


def _host(t):
    return t.detach().cpu().numpy()


def _count_asarray(backend, monkeypatch) -> list:
    calls = []
    real = backend.xp.asarray

    def counting(value, *args, **kwargs):
        calls.append(np.shape(value.a if isinstance(value, CArray) else value))
        return real(value, *args, **kwargs)

    monkeypatch.setattr(backend.xp, "asarray", counting, raising=False)
    return calls


def test_a_cpu_scalar_is_copied_to_the_device_once(cuda, monkeypatch):
    x = dj.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device="cuda")
    calls = _count_asarray(cuda, monkeypatch)
    first = x * 0.9
    for _ in range(5):
        again = x * 0.9
    assert calls == [()]  # one copy of 0.9, reused by the later products
    np.testing.assert_array_equal(_host(first), _host(again))
    np.testing.assert_array_equal(_host(x * 0.5), np.arange(6, dtype=np.float32).reshape(2, 3)
                                  * np.float32(0.5))
    assert len(calls) == 2  # another value: its own copy


def test_cached_scalars_keep_dtype_and_device_apart(cuda):
    x32 = dj.tensor([1.0, 2.0], dtype=dj.float32, device="cuda")
    x64 = dj.tensor([1.0, 2.0], dtype=dj.float64, device="cuda")
    xi = dj.tensor([1, 2], dtype=dj.int64, device="cuda")
    a, b, c = x32 + 0.1, x64 + 0.1, xi + 3
    assert (a.dtype, b.dtype, c.dtype) == (dj.float32, dj.float64, dj.int64)
    np.testing.assert_array_equal(_host(a), np.array([1.0, 2.0], np.float32) + np.float32(0.1))
    np.testing.assert_array_equal(_host(b), np.array([1.0, 2.0]) + 0.1)
    np.testing.assert_array_equal(_host(c), [4, 5])


def test_a_result_never_shares_the_cached_scalar(cuda):
    """Writing into an op's result leaves the number it was computed from unchanged."""
    x = dj.tensor(np.float32(2.0), device="cuda")
    y = dj.maximum(x, 3.0)  # may hand back its second operand's values
    y += 1.0
    z = dj.maximum(x, 3.0)
    assert float(_host(z)) == 3.0 and float(_host(y)) == 4.0


def _inplace_program(device):
    rng = np.random.default_rng(0)
    p = dj.tensor(rng.standard_normal((4, 3)).astype(np.float32), device=device)
    v = dj.tensor(rng.standard_normal((4, 3)).astype(np.float32), device=device)
    g = dj.tensor(rng.standard_normal((4, 3)).astype(np.float32), device=device)
    n = dj.tensor(np.arange(12).reshape(4, 3), device=device)
    with dj.no_grad():
        for _ in range(3):  # W1's manual momentum SGD
            v *= 0.9
            v += g
            p -= 0.05 * v
        p /= 3.0
        p.add_(g, alpha=2.0)  # alpha: the general path
        p.sub_(g)
        n += 2
        n *= 3
        p.mul_(v[0])  # another shape: the general path broadcasts
    return [p, v, n]


def test_device_inplace_arithmetic_equals_the_general_path(cuda):
    fast = [_host(t) for t in _inplace_program("cuda")]
    with short_paths.disabled():
        slow = [_host(t) for t in _inplace_program("cuda")]
    host = [t.numpy() for t in _inplace_program("cpu")]
    for a, b, c in zip(fast, slow, host):
        assert a.dtype == b.dtype == c.dtype
        assert a.tobytes() == b.tobytes() == c.tobytes()


def test_device_inplace_arithmetic_writes_into_the_tensor(cuda, monkeypatch):
    from dongjing.tensor import inplace

    v = dj.tensor(np.ones(3, np.float32), device="cuda")
    data, version = v._data, v._version[0]
    monkeypatch.setattr(inplace, "write_array", lambda *a: pytest.fail("took run_inplace"))
    with dj.no_grad():
        v *= 0.5
        v += v.detach().clone()
    assert v._data is data and v._version[0] == version + 2
    np.testing.assert_array_equal(_host(v), [1.0, 1.0, 1.0])


def test_device_inplace_keeps_the_general_checks(cuda):
    """What the short path does not take still raises as the general path does."""
    n = dj.tensor([1, 2], device="cuda")
    with pytest.raises(dj.errors.DTypeError):
        n *= 0.5  # an int tensor cannot hold the float product
    leaf = dj.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        leaf += 1.0


def test_a_backends_own_forward_serves_eager_ops_and_their_gradients(cuda):
    """`Backend.forwards` (CuPy: matmul through cuBLAS) replaces the op's `xp` forward in eager
    dispatch, forward and backward, with the same results."""
    calls = []

    def own_matmul(a, b):
        calls.append((a.shape, b.shape))
        return cuda.xp.matmul(a, b)

    rng = np.random.default_rng(1)
    x0, w0 = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    results = {}
    for own in (False, True):
        cuda.forwards.clear()
        if own:
            cuda.forwards["matmul"] = own_matmul
        x = dj.tensor(x0, device="cuda", requires_grad=True)
        w = dj.tensor(w0, device="cuda", requires_grad=True)
        loss = (x @ w).tanh().sum()
        loss.backward()
        results[own] = [_host(t) for t in (loss, x.grad, w.grad)]
    assert calls == [((4, 3), (3, 2)), ((4, 2), (2, 3)), ((3, 4), (4, 2))]
    for a, b in zip(results[False], results[True]):
        assert a.tobytes() == b.tobytes()
