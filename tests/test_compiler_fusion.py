"""Elementwise fusion: which nodes become one kernel, what stays NumPy, convexity, the NumPy
fallback, and equal values (forward and backward) with fusion forced on small shapes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dongjing as dj
from dongjing.compiler import build_program
from dongjing.cpu_kernels import kernels

needs_kernels = pytest.mark.skipif(not kernels.available(), reason="numba is not installed")


@pytest.fixture
def small_groups(monkeypatch):
    with dj.compiler.options(fusion_min_size=1):
        yield


def _gelu_graph(n=1000, dtype=None):
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((n,), dtype or dj.float32, name="x")
        y = 0.5 * x * (1 + dj.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
        loss = dj.sum(y)
        (gx,) = dj.gradients(loss, [x])
    return g, x, loss, gx


def _ops(program) -> list[str]:
    return [n.op.name for n in program.graph.nodes]


@needs_kernels
def test_a_float32_gelu_chain_forward_and_backward_is_one_kernel_with_tanh(small_groups,
                                                                           monkeypatch):
    dj.compiler.set_options(kernel_formulas="always")  # not this machine's measurement
    g, x, loss, gx = _gelu_graph()
    fused = build_program(g, [loss.node, gx.node], [x.node], 2)
    plain = build_program(g, [loss.node, gx.node], [x.node], 1)
    ops = _ops(fused)
    assert ops.count("fused_elementwise") == 1
    assert "tanh" not in ops and "mul" not in ops and "add" not in ops  # tanh through its formula
    xv = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
    for a, b in zip(fused([xv]), plain([xv])):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    main, kernels_text = fused.source.split("# fused kernels")
    assert kernels_text.count("def _kernel_fused") == 1 and "_u_tanh" not in kernels_text


@needs_kernels
def test_a_float64_gelu_chain_forward_and_backward_fuses_around_tanh(small_groups):
    g, x, loss, gx = _gelu_graph(dtype=dj.float64)
    fused = build_program(g, [loss.node, gx.node], [x.node], 2)
    plain = build_program(g, [loss.node, gx.node], [x.node], 1)
    ops = _ops(fused)
    assert ops.count("fused_elementwise") == 2
    assert ops.count("tanh") == 1  # no float64 formulation: NumPy's SIMD call
    assert "mul" not in ops and "add" not in ops
    kernels_nodes = [n for n in fused.graph.nodes if n.op.name == "fused_elementwise"]
    outputs_of_first = [n for n in fused.graph.nodes if n.inputs[:1] == (kernels_nodes[0],)]
    assert len(outputs_of_first) == 1  # the cheap 3*C*x**2 is recomputed, not stored
    xv = np.random.default_rng(3).standard_normal(1000)
    for a, b in zip(fused([xv]), plain([xv])):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    main, kernels_text = fused.source.split("# fused kernels")
    assert "_kernel_fused" in main and "def _kernel_fused" not in main
    assert kernels_text.count("def _kernel_fused") == 2 and "_u_multiply(" in kernels_text


def test_small_groups_stay_numpy_by_default():
    g, x, loss, gx = _gelu_graph(n=100)
    assert "fused_elementwise" not in _ops(build_program(g, [gx.node], [x.node], 2))


@needs_kernels
def test_no_group_closes_a_cycle_through_an_outside_node(small_groups):
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((50,), name="x")
        a = x * 2.0
        t = dj.tanh(a)  # not fusible, between two fusible nodes
        b = a + t
    program = build_program(g, [b.node], [x.node], 2)
    order = {n: i for i, n in enumerate(program.graph.nodes)}
    for node in program.graph.nodes:
        assert all(order[i] < order[node] for i in node.inputs)
    xv = np.linspace(-1, 1, 50, dtype=np.float32)
    np.testing.assert_allclose(program([xv])[0], xv * 2 + np.tanh(xv * 2), rtol=1e-6)


@needs_kernels
def test_without_a_kernel_library_the_same_values_come_from_numpy(small_groups, monkeypatch):
    g, x, loss, gx = _gelu_graph()
    xv = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    with_kernels = build_program(g, [gx.node], [x.node], 2)([xv])[0]
    monkeypatch.setattr(kernels, "available", lambda: False)
    program = build_program(g, [gx.node], [x.node], 2)
    assert "fused_elementwise" not in _ops(program)
    # NumPy's tanh against the kernel's formulation (each within an ulp of the exact tanh)
    np.testing.assert_allclose(program([xv])[0], with_kernels, rtol=1e-5, atol=1e-6)


@needs_kernels
def test_fused_outputs_are_fresh_and_kernel_buffers_are_reused(small_groups):
    g, x, loss, gx = _gelu_graph()
    program = build_program(g, [gx.node], [x.node], 2)
    xv = np.ones(1000, np.float32)
    first = program([xv])[0]
    kept = first.copy()
    program([xv * 3])
    np.testing.assert_array_equal(first, kept)


UNARY = ["neg", "tanh", "abs", "relu"]
BINARY = ["add", "sub", "mul", "maximum", "minimum", "div"]


@needs_kernels
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(st.tuples(st.sampled_from(UNARY + BINARY), st.integers(0, 5),
                             st.integers(0, 5), st.booleans()), min_size=2, max_size=7),
    seed=st.integers(0, 1000),
)
def test_random_elementwise_graphs_agree_when_fused(steps, seed):
    with dj.compiler.options(fusion_min_size=1):
        rng = np.random.default_rng(seed)
        xv, yv = rng.uniform(-2, 2, (2, 6, 4)).astype(np.float32)
        bv = rng.uniform(-2, 2, (4,)).astype(np.float32)
        g = dj.Graph()
        with g.as_default():
            x = dj.placeholder((6, 4), name="x")
            y = dj.placeholder((6, 4), name="y")
            b = dj.placeholder((4,), name="b")
            values = [x, y]
            for name, i, j, use_bias in steps:
                a = values[i % len(values)]
                other = b if use_bias else values[j % len(values)]
                if name in UNARY:
                    values.append(getattr(dj, name)(a))
                elif name == "div":
                    values.append(a / (dj.abs(other) + 1.0))
                else:
                    values.append(getattr(dj, name)(a, other))
            loss = dj.sum(values[-1] * values[-1])
            grads = dj.gradients(loss, [x, y, b])
        fetches = [loss.node] + [gr.node for gr in grads if gr is not None]
        feeds = [x.node, y.node, b.node]
        want = build_program(g, fetches, feeds, 1)([xv, yv, bv])
        got = build_program(g, fetches, feeds, 2)([xv, yv, bv])
        for a, e in zip(got, want):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


@needs_kernels
def test_large_kernels_and_ufuncs_split_over_two_threads_give_the_same_values(compiler_options,
                                                                            monkeypatch):

    compiler_options(parallel_min_size=64)
    compiler_options(fusion_min_size=64)
    g, x, loss, gx = _gelu_graph(n=1001, dtype=dj.float64)  # float64: tanh is a NumPy ufunc
    xv = np.random.default_rng(1).standard_normal(1001)
    compiler_options(threads=None)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    split = build_program(g, [loss.node, gx.node], [x.node], 2)
    assert "_split_kernel(" in split.source and "_split_ufunc(_np.tanh" in split.source
    compiler_options(threads=1)
    serial = build_program(g, [loss.node, gx.node], [x.node], 2)
    assert "_split_" not in serial.source
    for a, b in zip(split([xv]), serial([xv])):
        np.testing.assert_array_equal(a, b)
