"""Registry-driven checks: every op in the table has cases; every differentiable op's gradient
matches finite differences in float64 (first and second order)."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import CASES

import dongjing as dj
from dongjing.ops.registry import OPS

OWN_TESTS = {"source", "effect", "control"}  # kinds tested by their own suites


def _cases(grad_only=False):
    for op_name, cases in sorted(CASES.items()):
        for i, case in enumerate(cases):
            if grad_only and not (case.grad and OPS[op_name].differentiable):
                continue
            yield pytest.param(op_name, case, id=f"{op_name}-{case.name or i}")


def _tensors(case):
    out = []
    for a in case.inputs:
        a = np.asarray(a)
        if a.dtype.kind == "f":
            out.append(dj.tensor(a.astype(np.float64), requires_grad=True))
        else:
            out.append(dj.tensor(a))
    return out


def _ops_on_tape(t) -> set:
    seen, stack, names = set(), [t.grad_fn], set()
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        if hasattr(fn, "op"):
            names.add(fn.op.name)
        stack.extend(f for f, _ in fn.next_functions)
    return names


def test_every_op_has_a_case():
    missing = [n for n, op in OPS.items() if op.kind not in OWN_TESTS and not CASES.get(n)]
    assert not missing, f"ops without a case in tests/op_cases.py: {missing}"


def test_cases_name_real_ops():
    assert not set(CASES) - set(OPS), f"cases for unknown ops: {set(CASES) - set(OPS)}"


@pytest.mark.parametrize("op_name,case", list(_cases()))
def test_forward_runs_and_is_typed(op_name, case):
    inputs = _tensors(case)
    out = case.fn(*inputs)
    assert isinstance(out, dj.Tensor)
    assert np.all(np.isfinite(out.numpy().astype(np.float64)))


@pytest.mark.parametrize("op_name,case", list(_cases(grad_only=True)))
def test_gradcheck(op_name, case):
    inputs = _tensors(case)
    out = case.fn(*inputs)
    assert op_name in _ops_on_tape(out) or op_name == "count", (
        f"case does not put {op_name!r} on the tape: {_ops_on_tape(out)}"
    )
    assert dj.autograd.gradcheck(case.fn, inputs, **case.tol)


@pytest.mark.parametrize("op_name,case", list(_cases(grad_only=True)))
def test_second_order_gradcheck(op_name, case):
    """The vjp rules are themselves differentiable: check d/dx <grad f(x) . w, v>."""
    inputs = _tensors(case)
    float_idx = [i for i, t in enumerate(inputs) if t.requires_grad]
    out = case.fn(*inputs)
    rng = np.random.default_rng(1)
    w = dj.tensor(rng.standard_normal(out.shape))
    vs = [dj.tensor(rng.standard_normal(inputs[i].shape)) for i in float_idx]

    def directional(*xs):
        y = case.fn(*xs)
        grads = dj.grad((y * w).sum(), [xs[i] for i in float_idx], create_graph=True,
                        allow_unused=True)
        total = None
        for g, v in zip(grads, vs):
            if g is None:
                continue
            term = (g * v).sum()
            total = term if total is None else total + term
        return total if total is not None else (xs[float_idx[0]] * 0.0).sum()

    probe = directional(*inputs)
    if not probe.requires_grad:
        pytest.skip("gradient is constant in the inputs (linear op)")
    tol = {"atol": 1e-4, "rtol": 1e-3, **case.tol}
    assert dj.autograd.gradcheck(directional, inputs, **tol)
