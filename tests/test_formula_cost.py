"""Whether fused kernels compute float32 tanh through its formulation is measured once per
machine (compiler/formula_cost.py), remembered on disk, and can be forced either way."""

from __future__ import annotations

import json

import numpy as np
import pytest

import dongjing as dj
from dongjing.compiler import build_program, formula_cost
from dongjing.core.registry import OPS
from dongjing.cpu_kernels import kernels

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba is not installed")
F32 = np.dtype("float32")


@pytest.fixture
def fresh(compiler_options, monkeypatch, tmp_path):
    """Measured (not forced), nothing decided in this process, the disk cache in tmp_path."""
    compiler_options(kernel_formulas="auto")
    monkeypatch.setattr(formula_cost, "_decided", {})
    monkeypatch.setenv("DONGJING_CACHE_DIR", str(tmp_path))
    return tmp_path / "kernels" / "formulas.json"


def test_measure_times_the_formulation_the_ufunc_and_a_copy():
    found = formula_cost.measure(OPS["tanh"], F32, block=1 << 12)
    assert all(found[k] > 0 for k in ("formula", "ufunc", "copy"))
    assert found["fuse"] == (found["formula"] < found["ufunc"] + 2 * found["copy"])


def test_the_answer_is_measured_once_and_read_back_from_disk(fresh, monkeypatch):
    calls = []
    monkeypatch.setattr(formula_cost, "measure",
                        lambda op, dtype: calls.append(op.name) or {"fuse": False})
    assert formula_cost.pays(OPS["tanh"], F32) is False
    assert formula_cost.pays(OPS["tanh"], F32) is False
    assert calls == ["tanh"]
    assert list(json.loads(fresh.read_text()).values()) == [False]
    monkeypatch.setattr(formula_cost, "_decided", {})  # as a new process would start
    monkeypatch.setattr(formula_cost, "measure", lambda op, dtype: pytest.fail("measured again"))
    assert formula_cost.pays(OPS["tanh"], F32) is False


def test_without_a_disk_cache_the_answer_is_kept_in_the_process(fresh, monkeypatch):
    monkeypatch.setenv("DONGJING_CACHE_DIR", "")
    calls = []
    monkeypatch.setattr(formula_cost, "measure",
                        lambda op, dtype: calls.append(op.name) or {"fuse": True})
    assert formula_cost.pays(OPS["tanh"], F32) and formula_cost.pays(OPS["tanh"], F32)
    assert calls == ["tanh"] and not fresh.exists()


@pytest.mark.parametrize("policy, fused", [("always", True), ("never", False)])
def test_the_policy_forces_the_choice_without_measuring(compiler_options, fresh, monkeypatch,
                                                         policy, fused):
    compiler_options(kernel_formulas=policy)
    monkeypatch.setattr(formula_cost, "measure", lambda op, dtype: pytest.fail("measured"))
    assert formula_cost.pays(OPS["tanh"], F32) is fused


@pytest.mark.parametrize("fuse", [True, False])
def test_the_fusion_pass_follows_the_answer_and_the_values_agree(compiler_options, monkeypatch,
                                                                 fuse):
    compiler_options(fusion_min_size=1)
    compiler_options(kernel_formulas="always" if fuse else "never")
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((1000,), dj.float32, name="x")
        y = 0.5 * x * (1 + dj.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
        (gx,) = dj.gradients(dj.sum(y), [x])
    fused = build_program(g, [y.node, gx.node], [x.node], 2)
    plain = build_program(g, [y.node, gx.node], [x.node], 0)
    ops = [n.op.name for n in fused.graph.nodes]
    assert ("tanh" in ops) is not fuse and "fused_elementwise" in ops
    xv = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    for a, b in zip(fused([xv]), plain([xv])):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_small_groups_never_trigger_a_measurement(fresh, monkeypatch):
    monkeypatch.setattr(formula_cost, "measure", lambda op, dtype: pytest.fail("measured"))
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((64,), dj.float32, name="x")
        y = dj.tanh(x * 2.0) + 1.0
    build_program(g, [y.node], [x.node], 2)
    assert not fresh.exists()


def test_a_measurement_that_fails_keeps_the_ufunc_and_remembers_nothing(fresh, monkeypatch):
    def broken(op, dtype):
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(formula_cost, "measure", broken)
    assert formula_cost.pays(OPS["tanh"], F32) is False
    assert not fresh.exists()
