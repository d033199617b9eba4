"""The compiler's public settings: dj.compiler.set_options / options / get_options."""

import os
import subprocess
import sys

import numpy as np
import pytest

import dongjing as dj
from dongjing.compiler import build_program
from dongjing.cpu_kernels import kernels, parallel
from dongjing.errors import DongjingError

needs_kernels = pytest.mark.skipif(not kernels.available(), reason="numba is not installed")


def _chain_graph(n=64):
    with dj.Graph() as g:
        x = dj.placeholder((n,), dj.float64, name="x")
        y = dj.sum((x * 2.0 + 1.0) * x - 3.0)
    return g, x, y


def test_defaults_and_the_context_manager_restores():
    before = dj.compiler.get_options()
    assert isinstance(before, dj.compiler.CompilerOptions)
    assert before.fusion_min_size == 1 << 17 and before.threads is None
    with dj.compiler.options(fusion_min_size=8, threads=1) as inside:
        assert inside.fusion_min_size == 8 and dj.compiler.get_options().threads == 1
    assert dj.compiler.get_options() == before


def test_set_options_returns_the_previous_settings(compiler_options):
    previous = compiler_options(kernel_formulas="never")
    assert dj.compiler.get_options().kernel_formulas == "never"
    assert previous.kernel_formulas != "never" or previous == dj.compiler.get_options()


@pytest.mark.parametrize("changes, words", [
    ({"fusion_size": 1}, "unknown setting 'fusion_size'"),
    ({"fusion_min_size": 0}, "fusion_min_size must be an int >= 1"),
    ({"threads": 0}, "threads must be an int >= 1 or None"),
    ({"threads": True}, "threads must be an int"),
    ({"kernel_formulas": "sometimes"}, "kernel_formulas must be one of auto, always, never"),
])
def test_bad_settings_raise_before_anything_changes(changes, words):
    before = dj.compiler.get_options()
    with pytest.raises(DongjingError, match=words):
        dj.compiler.set_options(**changes)
    assert dj.compiler.get_options() == before


@needs_kernels
def test_fusion_min_size_decides_what_is_fused(compiler_options):
    g, x, y = _chain_graph()
    plain = build_program(g, [y.node], [x.node], 2)
    assert not any(n.op.kind == "fused" for n in plain.graph.nodes)  # 64 < 2**17 elements
    compiler_options(fusion_min_size=1)
    fused = build_program(g, [y.node], [x.node], 2)
    assert any(n.op.kind == "fused" for n in fused.graph.nodes)
    xv = np.linspace(-1, 1, 64)
    np.testing.assert_allclose(fused([xv])[0], plain([xv])[0])


def test_threads_setting(compiler_options, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    compiler_options(threads=1)
    assert parallel.threads() == 1
    compiler_options(threads=None)
    assert parallel.threads() == min(2, os.cpu_count() or 1)
    compiler_options(parallel_min_size=123)
    assert parallel.min_size() == 123


@needs_kernels
def test_threads_one_compiles_no_split_calls(compiler_options, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    compiler_options(parallel_min_size=16, fusion_min_size=16)
    g, x, y = _chain_graph(n=100)
    split = build_program(g, [y.node], [x.node], 2)
    compiler_options(threads=1)
    serial = build_program(g, [y.node], [x.node], 2)
    assert "_split_" not in serial.source
    if parallel.threads() > 1 or (os.cpu_count() or 1) > 1:
        assert "_split_" in split.source
    xv = np.linspace(-1, 1, 100)
    np.testing.assert_allclose(split([xv])[0], serial([xv])[0])


@pytest.mark.parametrize("env, policy", [("1", "always"), ("0", "never"), ("never", "never"),
                                         ("bogus", "auto")])
def test_the_environment_variable_sets_the_starting_policy(env, policy):
    code = "import dongjing as dj; print(dj.compiler.get_options().kernel_formulas)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, "DONGJING_KERNEL_FORMULAS": env})
    assert done.stdout.strip() == policy
