"""Every op-table case on the GPU: the same forward values and gradients as on the CPU (float64),
results that stay on the GPU, and gradcheck against finite differences on CUDA."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_helpers import on_gpu
from op_cases import as_list, case_inputs, case_params

import dongjing as dj
from dongjing.ops.registry import OPS


def _inputs(case, gpu: bool):
    return case_inputs(case, (lambda a: dj.Tensor._make(a, False).cuda()) if gpu else None)


def _run(case, gpu: bool):
    """Forward values and, for a differentiable case, the gradients of sum(out * w)."""
    inputs = _inputs(case, gpu)
    outs = as_list(case.fn(*inputs))
    grads = []
    if case.grad and any(t.requires_grad for t in inputs):
        rng = np.random.default_rng(3)
        total = None
        for o in outs:
            if not o.requires_grad:
                continue
            w = dj.Tensor._make(rng.standard_normal(o.shape))
            term = (o * (w.cuda() if gpu else w)).sum()
            total = term if total is None else total + term
        if total is not None:
            total.backward()
            grads = [t.grad for t in inputs]
    return outs, grads


def _same(name, got, want, exact_values: bool = True):
    if want is None:
        assert got is None, f"{name}: expected no gradient"
        return
    assert on_gpu(got), f"{name}: the result left the GPU ({type(got._data).__name__})"
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{name}: {got.shape} {got.dtype} vs the CPU's {want.shape} {want.dtype}")
    if exact_values:
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-9, atol=1e-11,
                                   err_msg=name)


@pytest.mark.parametrize("op_name,case", list(case_params()))
def test_op_on_gpu_matches_cpu(op_name, case):
    dj.manual_seed(0)
    want_values, want_grads = _run(case, gpu=False)
    dj.manual_seed(0)
    got_values, got_grads = _run(case, gpu=True)
    exact = not OPS[op_name].random  # a random op draws from the GPU's own generator
    assert len(got_values) == len(want_values)
    for i, (got, want) in enumerate(zip(got_values, want_values)):
        _same(f"{op_name} output {i}", got, want, exact)
    assert len(got_grads) == len(want_grads)
    for i, (got, want) in enumerate(zip(got_grads, want_grads)):
        _same(f"{op_name} gradient of input {i}", got, want, exact)


@pytest.mark.parametrize("op_name,case", list(case_params()))
def test_op_gradcheck_on_gpu(op_name, case):
    if not (case.grad and OPS[op_name].differentiable) or OPS[op_name].random:
        pytest.skip("not a differentiable deterministic case")
    inputs = _inputs(case, gpu=True)
    if not any(t.requires_grad for t in inputs):
        pytest.skip("no float input")
    assert dj.autograd.gradcheck(case.fn, inputs, **case.tol)
