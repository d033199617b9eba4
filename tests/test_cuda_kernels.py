"""The CUDA form of fused elementwise groups (compiler/cuda_kernels.py), checked without a GPU:
the generated kernel body is compiled as C++ (g++) and run over NumPy arrays, and must agree
with NumPy on the same graph, NaN, infinities and signed zeros included; nvcc, when present,
compiles it as device code. The GPU suite (tests/gpu) runs the kernels themselves."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

import dongjing as dj
from dongjing.compiler import cuda_kernels
from dongjing.compiler.pipeline import optimize

_SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3, 7.0])


def _graph(dtype):
    g = dj.Graph()
    with g.as_default():
        a = dj.placeholder(dtype, shape=(12,), name="a")
        b = dj.placeholder(dtype, shape=(12,), name="b")
        c = dj.maximum(a, b) - dj.minimum(a * 2.0, b)
        d = dj.sign(c) * dj.abs(b) + dj.tanh(a) / (dj.exp(b) + 1.0)
        e = dj.logaddexp(a, b) + dj.sqrt(dj.abs(a)) - dj.log1p(dj.abs(b))
        f = dj.where(a > b, d, e) * dj.neg(a)
        outs = [c, d + e, f, dj.logical_and(a > 0.0, b <= 1.0)]
    return g, a, b, outs


def _fused(dtype):
    g, a, b, outs = _graph(dtype)
    opt, fetches, _ = optimize(g, [o._node for o in outs], [a._node, b._node], 2, "cuda")
    kernels = [n for n in opt.nodes if n.op.kind == "fused"]
    assert kernels, "nothing was fused for the CUDA target"
    return g, a, b, outs, opt, kernels


_C_TYPES = {"float32": "float", "float64": "double", "bool": "bool", "int64": "long long",
            "int32": "int"}


def _cpp_source(kernel, opt) -> tuple[str, list, list]:
    body = kernel.attrs["body"]
    in_dtypes = [i.dtype.name for i in kernel.inputs]
    outs = sorted((u for u in opt.nodes if u.op.name == "tuple_get" and u.inputs[0] is kernel),
                  key=lambda u: u.attrs["index"])
    out_dtypes = [u.dtype.name for u in outs]
    _, _, operation = cuda_kernels.kernel_parts(body, in_dtypes, out_dtypes)
    params = [f"const {_C_TYPES[d]}* p_in{k}" for k, d in enumerate(in_dtypes)]
    params += [f"{_C_TYPES[d]}* p_out{k}" for k, d in enumerate(out_dtypes)]
    loads = [f"{_C_TYPES[d]} in{k} = p_in{k}[i];" for k, d in enumerate(in_dtypes)]
    decls = [f"{_C_TYPES[d]} out{k};" for k, d in enumerate(out_dtypes)]
    stores = [f"p_out{k}[i] = out{k};" for k in range(len(out_dtypes))]
    source = ("#include <cmath>\nusing namespace std;\n"
              f"extern \"C\" void run(long n, {', '.join(params)}) {{\n"
              "  for (long i = 0; i < n; i++) {\n    "
              + "\n    ".join(loads + decls + operation.splitlines() + stores)
              + "\n  }\n}\n")
    return source, outs, in_dtypes


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
@pytest.mark.parametrize("dtype", [dj.float32, dj.float64])
def test_the_kernel_body_computes_what_numpy_computes(dtype, tmp_path):
    g, a, b, outs, opt, kernels = _fused(dtype)
    rng = np.random.default_rng(0)
    a0 = rng.permutation(_SPECIAL).astype(dtype)
    b0 = _SPECIAL.astype(dtype)
    values = {}  # node name -> computed value
    feeds = {opt._by_name["a"]: a0, opt._by_name["b"]: b0}
    for n, kernel in enumerate(kernels):
        source, kernel_outs, in_dtypes = _cpp_source(kernel, opt)
        (tmp_path / f"k{n}.cpp").write_text(source)
        lib = tmp_path / f"k{n}.so"
        subprocess.run(["g++", "-O1", "-shared", "-fPIC", "-o", str(lib),
                        str(tmp_path / f"k{n}.cpp")], check=True)
        run = ctypes.CDLL(str(lib)).run
        inputs = []
        for node in kernel.inputs:
            if node in feeds:
                inputs.append(feeds[node])
            else:
                with dj.Session(g, optimize=0) as sess:
                    inputs.append(np.broadcast_to(
                        np.asarray(sess.run(g._by_name[node.name], {a: a0, b: b0})), (12,)))
        inputs = [np.ascontiguousarray(x) for x in inputs]
        results = [np.empty(12, u.dtype) for u in kernel_outs]
        run(ctypes.c_long(12), *[x.ctypes.data_as(ctypes.c_void_p) for x in inputs + results])
        for u, r in zip(kernel_outs, results):
            values[u.name] = r
    with dj.Session(g, optimize=0) as sess:
        want = sess.run([g._by_name[n] for n in values], {a: a0, b: b0})
    assert values
    for (name, got), ref in zip(values.items(), want):
        np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(ref[ref == 0]),
                                      err_msg=name)
        np.testing.assert_allclose(got, ref, rtol=2e-6 if dtype == dj.float32 else 1e-13,
                                   atol=1e-7, err_msg=name)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_kernel_body_compiles_as_cuda(tmp_path):
    for dtype in (dj.float32, dj.float64):
        _, _, _, _, opt, kernels = _fused(dtype)
        for n, kernel in enumerate(kernels):
            source, _, _ = _cpp_source(kernel, opt)
            device = source.replace("#include <cmath>\nusing namespace std;\n", "").replace(
                'extern "C" void run(long n, ', "__global__ void run(long n, ").replace(
                "for (long i = 0; i < n; i++)", "long i = blockIdx.x * blockDim.x + threadIdx.x;"
                " if (i < n)")
            path = tmp_path / f"k{dtype.name}{n}.cu"
            path.write_text(device)
            subprocess.run(["nvcc", "-c", "-o", str(path.with_suffix(".o")), str(path)],
                           check=True, capture_output=True)


def test_ops_without_a_cuda_form_stay_out_of_kernels():
    g = dj.Graph()
    with g.as_default():
        a = dj.placeholder(dj.int64, shape=(8,), name="a")
        out = (a // 3) * 2 + 1
    opt, _, _ = optimize(g, [out._node], [a._node], 2, "cuda")
    fused = [n for n in opt.nodes if n.op.kind == "fused"]
    assert all("floor_divide" not in repr(n.attrs["body"]) for n in fused)
    assert cuda_kernels.expression("true_divide", ["x", "y"], "int64") is None
    assert "(float)x != (float)x" in cuda_kernels.expression("maximum", ["x", "y"], "float32")
