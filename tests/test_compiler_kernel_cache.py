"""Fused kernels are cached on disk, keyed by their source: a second process (here: a fresh
dispatcher) loads numba's machine code instead of compiling again."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from dongjing.cpu_kernels import kernels

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba is not installed")

SOURCE = """def _kernel_t(n, in0, in1, out0):
    for i in range(n):
        a0 = in0[i]
        a1 = in1
        t0 = _u_multiply(a0, a1)
        t1 = _u_add(t0, a0)
        out0[i] = t1
"""
NAMESPACE = {"_u_multiply": np.multiply, "_u_add": np.add}


def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget the in-process caches, as a new process would."""
    monkeypatch.setattr(kernels, "_cache", {})
    for name in [m for m in sys.modules if m.startswith("dongjing_kernel_")]:
        monkeypatch.delitem(sys.modules, name)


def _run(kernel) -> np.ndarray:
    x = np.arange(5, dtype=np.float32)
    out = np.empty_like(x)
    kernel(5, x, np.float32(2), out)
    return out


def test_second_process_loads_the_cached_kernel(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DONGJING_CACHE_DIR", str(tmp_path))
    _fresh(monkeypatch)
    first = kernels.compile_kernel(SOURCE, "_kernel_t", NAMESPACE)
    np.testing.assert_array_equal(_run(first), np.arange(5, dtype=np.float32) * 3)
    assert first.stats.cache_misses and not first.stats.cache_hits
    assert len(list((tmp_path / "kernels").glob("k_*.py"))) == 1
    _fresh(monkeypatch)
    second = kernels.compile_kernel(SOURCE, "_kernel_t", NAMESPACE)
    assert second is not first
    np.testing.assert_array_equal(_run(second), _run(first))
    assert second.stats.cache_hits and not second.stats.cache_misses
    # another source is another file
    _fresh(monkeypatch)
    kernels.compile_kernel(SOURCE.replace("t1 = _u_add(t0, a0)", "t1 = _u_add(t0, a1)"),
                           "_kernel_t", NAMESPACE)
    assert len(list((tmp_path / "kernels").glob("k_*.py"))) == 2


def test_disk_cache_off_or_unusable_compiles_in_memory(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DONGJING_CACHE_DIR", "")
    assert kernels.cache_dir() is None
    _fresh(monkeypatch)
    np.testing.assert_array_equal(_run(kernels.compile_kernel(SOURCE, "_kernel_t", NAMESPACE)),
                                  np.arange(5, dtype=np.float32) * 3)
    # a namespace value that is not a NumPy ufunc cannot be imported by name: in memory
    monkeypatch.setenv("DONGJING_CACHE_DIR", str(tmp_path))
    _fresh(monkeypatch)
    mul = np.frompyfunc(lambda a, b: a * b, 2, 1)
    assert kernels._from_disk(SOURCE, "_kernel_t", {**NAMESPACE, "_u_multiply": mul}) is None
    assert not (tmp_path / "kernels").exists()


def test_default_cache_dir_follows_xdg(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("DONGJING_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert kernels.cache_dir() == tmp_path / "dongjing" / "kernels"
