"""Fused kernels as native libraries in the kernel cache: built once with numba, loaded by a later
process without numba, computing the same bits as numba's JIT kernel."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dongjing.cpu_kernels import kernels, native

pytestmark = [
    pytest.mark.skipif(not kernels.available(), reason="numba is not installed"),
    pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("cc") is None,
                       reason="native kernel libraries need Linux and a C compiler"),
]

# W3's fused forward/backward body (GELU with the in-kernel tanh), as codegen writes it
SOURCE = """def _kernel_w3(n, in0, in1, in2, in3, in4, in5, out0, out1):
    for i in range(n):
        a0 = in0
        a1 = in1[i]
        a2 = in2
        a3 = in3
        a4 = in4
        a5 = in5
        t0 = _u_multiply(a0, a1)
        t1 = _u_multiply(a1, a1)
        t2 = _u_multiply(t1, a1)
        t3 = _u_multiply(a2, t2)
        t4 = _u_add(a1, t3)
        t5 = _u_multiply(a3, t4)
        u6 = _f64(t5)
        y6 = min(max(u6, -10.0), 10.0) * (2.0 / 1024.0)
        e6 = 1.0 + y6 * (1.0 + y6 * (0.5 + y6 * (1.0 / 6.0 + y6 * (1.0 / 24.0))))
        e6 = e6 * e6
        e6 = e6 * e6
        t6 = _f32(u6 * (1.0 - u6 * u6 / 3.0) if abs(u6) < 1e-4 else (1.0 - 2.0 / (e6 + 1.0) if u6 == u6 else u6))
        t7 = _u_add(a4, t6)
        t8 = _u_multiply(t0, t7)
        t9 = _u_subtract(a4, _u_multiply(t6, t6))
        t10 = _u_true_divide(_u_multiply(t9, a5), t7)
        out0[i] = t8
        out1[i] = t10
"""  # noqa: E501
NAMESPACE = {"_u_multiply": np.multiply, "_u_add": np.add, "_u_subtract": np.subtract,
             "_u_true_divide": np.true_divide, "_f64": np.float64, "_f32": np.float32}
PARAMS = (("scalar", "float32"), ("array", "float32"), ("scalar", "float32"),
          ("scalar", "float32"), ("scalar", "float32"), ("scalar", "float32"),
          ("out", "float32"), ("out", "float32"))
SCALARS = [np.float32(v) for v in (0.5, 0.044715, 0.7978846, 1.0, 3 * 0.044715)]


def _inputs(n: int = 4099) -> np.ndarray:
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32) * np.float32(6)
    x[:10] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-6, -1e-30, 20.0, -9.99, 1e-4]
    return x


def _run(kernel, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = SCALARS
    out0, out1 = np.empty_like(x), np.empty_like(x)
    with np.errstate(all="ignore"):
        kernel(x.size, s[0], x, s[1], s[2], s[3], s[4], out0, out1)
    return out0, out1


def _bits(arrays) -> list:
    return [a.view(np.uint32).tolist() for a in arrays]


def _fresh(monkeypatch) -> None:
    monkeypatch.setattr(kernels, "_cache", {})


@pytest.fixture(scope="module")
def library_dir(tmp_path_factory) -> Path:
    """A kernel cache holding the library of SOURCE, built once for this module's tests."""
    folder = tmp_path_factory.mktemp("native")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DONGJING_CACHE_DIR", str(folder))
        _fresh(mp)
        built = kernels.compile_kernel(SOURCE, "_kernel_w3", NAMESPACE, PARAMS)
    assert isinstance(built, kernels.NativeKernel), native._broken
    assert len(list((folder / "kernels").glob("n_*.so"))) == 1
    return folder


def _native_kernel(folder: Path, monkeypatch) -> kernels.NativeKernel:
    monkeypatch.setenv("DONGJING_CACHE_DIR", str(folder))
    _fresh(monkeypatch)
    kernel = kernels.compile_kernel(SOURCE, "_kernel_w3", NAMESPACE, PARAMS)
    assert isinstance(kernel, kernels.NativeKernel)
    return kernel


@pytest.fixture(scope="module")
def jit_kernel():
    """numba's JIT kernel of SOURCE, compiled in memory (the disk cache off)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DONGJING_CACHE_DIR", "")
        _fresh(mp)
        return kernels.compile_kernel(SOURCE, "_kernel_w3", NAMESPACE)


def test_a_native_kernel_computes_the_bits_of_numbas(library_dir, jit_kernel, monkeypatch):
    built = _native_kernel(library_dir, monkeypatch)
    jit = jit_kernel
    x = _inputs()
    assert _bits(_run(built, x)) == _bits(_run(jit, x))
    # a layout or dtype the library was not built for runs numba's kernel, same bits
    wide = np.repeat(x, 2)[::2]
    assert not wide.flags.c_contiguous
    assert _bits(_run(built, wide)) == _bits(_run(jit, x))
    assert built._fallback is not None


def test_the_native_call_refuses_what_it_was_not_built_for(library_dir, monkeypatch):
    call = _native_kernel(library_dir, monkeypatch).call
    x, s = _inputs(16)[:8].copy(), SCALARS
    out = np.empty_like(x)
    assert call(8, s[0], x, s[1], s[2], s[3], s[4], out, out.copy()) is None
    assert call(8, np.float64(0.5), x, s[1], s[2], s[3], s[4], out, out) is NotImplemented
    assert call(8, s[0], x.astype(np.float64), s[1], s[2], s[3], s[4], out, out) is NotImplemented
    assert call(9, s[0], x, s[1], s[2], s[3], s[4], out, out) is NotImplemented  # too short
    frozen = out.copy()
    frozen.flags.writeable = False
    assert call(8, s[0], x, s[1], s[2], s[3], s[4], frozen, out) is NotImplemented
    with pytest.raises(TypeError, match="takes 9 arguments"):
        call(8, s[0], x)


_CHILD = """
import json, sys
import numpy as np
sys.path[:0] = [{tests!r}]
from test_native_kernels import SOURCE, NAMESPACE, PARAMS, _inputs, _run, _bits
from dongjing.cpu_kernels import kernels
k = kernels.compile_kernel(SOURCE, "_kernel_w3", NAMESPACE, PARAMS)
out = _bits(_run(k, _inputs()))
print(json.dumps({{"native": isinstance(k, kernels.NativeKernel), "numba": "numba" in sys.modules,
                   "out": out}}))
"""


def test_a_second_process_loads_the_library_without_numba(library_dir, monkeypatch):
    env = dict(os.environ, DONGJING_CACHE_DIR=str(library_dir))
    code = _CHILD.format(tests=str(Path(__file__).parent))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    child = json.loads(done.stdout.strip().splitlines()[-1])
    assert child["native"] and not child["numba"]  # loaded, numba never imported
    here = _native_kernel(library_dir, monkeypatch)
    assert child["out"] == _bits(_run(here, _inputs()))


def test_native_kernels_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("DONGJING_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("DONGJING_NATIVE_KERNELS", "0")
    _fresh(monkeypatch)
    kernel = kernels.compile_kernel(SOURCE, "_kernel_w3", NAMESPACE, PARAMS)
    assert not isinstance(kernel, kernels.NativeKernel)
    assert not list((tmp_path / "kernels").glob("n_*.so"))


def test_the_library_key_covers_source_types_and_machine():
    key = native.library_key("text", PARAMS)
    assert key == native.library_key("text", PARAMS)
    assert key != native.library_key("text2", PARAMS)
    assert key != native.library_key("text", PARAMS[:-1] + (("out", "float64"),))
    assert native.supported(PARAMS) and not native.supported((("array", "bool"),))


def test_without_a_c_compiler_numba_runs_the_kernel(jit_kernel, tmp_path, monkeypatch):
    monkeypatch.setenv("DONGJING_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setattr(native, "_broken", [])
    _fresh(monkeypatch)
    kernel = kernels.compile_kernel(SOURCE, "_kernel_w3", NAMESPACE, PARAMS)
    assert not isinstance(kernel, kernels.NativeKernel) and native._broken
    assert not native.enabled()  # not tried again in this process
    assert _bits(_run(kernel, _inputs(64))) == _bits(_run(jit_kernel, _inputs(64)))
