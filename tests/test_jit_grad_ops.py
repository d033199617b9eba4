"""Gradients through dj.jit equal eager gradients for every differentiable op of the op table
(driven by tests/op_cases.py, as the gradcheck test is): for tensor arguments and for the same
values captured as Parameters."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import CASES

import dongjing as dj
import dongjing.nn as nn
from dongjing.ops.registry import OPS


def _grad_cases():
    for op_name, cases in sorted(CASES.items()):
        for i, case in enumerate(cases):
            if case.grad and OPS[op_name].differentiable:
                yield pytest.param(case, id=f"{op_name}-{case.name or i}")


def _inputs(case, make):
    return [make(np.asarray(a, np.float64)) if np.asarray(a).dtype.kind == "f"
            else dj.tensor(np.asarray(a)) for a in case.inputs]


def _weighted(out):
    w = np.random.default_rng(1).uniform(0.5, 1.5, out.shape).astype(out.numpy().dtype)
    return (out * dj.tensor(w)).sum()


def _eager_grads(case):
    xs = _inputs(case, lambda a: dj.tensor(a, requires_grad=True))
    _weighted(case.fn(*xs)).backward()
    return [x.grad.numpy() if x.grad is not None else None for x in xs if x.requires_grad]


def _compare(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if w is None:
            assert g is None or not np.any(g)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("case", list(_grad_cases()))
def test_grad_through_jit_arguments(case):
    xs = _inputs(case, lambda a: dj.tensor(a, requires_grad=True))
    out = dj.jit(case.fn)(*xs)  # O2: fused kernels save intermediates too
    assert type(out.grad_fn).__name__ == "JitBackward0"
    _weighted(out).backward()
    _compare([x.grad.numpy() if x.grad is not None else None for x in xs if x.requires_grad],
             _eager_grads(case))


@pytest.mark.parametrize("case", list(_grad_cases()))
def test_grad_through_jit_captured_parameters(case):
    ps = _inputs(case, nn.Parameter)
    out = dj.jit(lambda: case.fn(*ps), optimize=1)()
    assert type(out.grad_fn).__name__ == "JitBackward0"
    _weighted(out).backward()
    _compare([p.grad.numpy() if p.grad is not None else None for p in ps if p.requires_grad],
             _eager_grads(case))
