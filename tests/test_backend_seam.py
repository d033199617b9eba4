"""The backend seam is complete: every op-table case runs eagerly on tensors holding arrays of
the test backend (`wrapped_backend.WArray`, which NumPy's functions refuse), forward and first
gradients, with the same values as on NumPy and results that stay on the test backend."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import as_list, case_inputs, case_params
from wrapped_backend import LeakError, WArray, unwrap, wrapped_backend

import dongjing as dj
from dongjing.backends import backend_of, numpy_backend
from dongjing.ops.registry import OPS


def _inputs(case, wrapped: bool):
    return case_inputs(case, (lambda a: dj.Tensor._make(WArray(a), False)) if wrapped else None)


def _run(case, wrapped: bool):
    """Forward values and, for a differentiable case, the gradients of sum(out * w)."""
    inputs = _inputs(case, wrapped)
    outs = as_list(case.fn(*inputs))
    values = [o._data for o in outs]
    grads = []
    if case.grad and any(t.requires_grad for t in inputs):
        rng = np.random.default_rng(3)
        total = None
        for o in outs:
            if not o.requires_grad:
                continue
            w = rng.standard_normal(o.shape)
            w = dj.Tensor._make(WArray(w) if wrapped else w, False)
            term = (o * w).sum()
            total = term if total is None else total + term
        if total is not None:
            total.backward()
            grads = [t.grad._data if t.grad is not None else None for t in inputs]
    return values, grads


def _same(name, got, want):
    if want is None:
        assert got is None, f"{name}: expected no gradient"
        return
    assert type(got) is WArray, f"{name}: a {type(got).__name__} left the test backend"
    got = unwrap(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{name}: {got.shape} {got.dtype} vs NumPy's {want.shape} {want.dtype}")
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=name)


@pytest.fixture
def strict_results(monkeypatch):
    """Every op given a wrapped input must produce a wrapped result and get no NumPy array
    beside it: constants that ops make (index arrays, masks) are made on the test backend too
    (intermediates included)."""
    from dongjing import dispatch

    finish = dispatch._finish

    def checked(op, out, expected, inputs, attrs, requires):
        kinds = {type(t._data) for t in inputs}
        if WArray in kinds and type(out) is not WArray:
            raise LeakError(f"op {op.name!r} returned a {type(out).__name__} for wrapped inputs")
        if WArray in kinds and np.ndarray in kinds:
            raise LeakError(f"op {op.name!r} got a NumPy array beside wrapped inputs")
        return finish(op, out, expected, inputs, attrs, requires)

    monkeypatch.setattr(dispatch, "_finish", checked)


@pytest.mark.parametrize("op_name,case", list(case_params()))
def test_op_runs_on_the_test_backend(op_name, case, strict_results):
    dj.manual_seed(0)
    want_values, want_grads = _run(case, wrapped=False)
    dj.manual_seed(0)
    try:
        got_values, got_grads = _run(case, wrapped=True)
    except LeakError as exc:
        pytest.fail(f"op {op_name!r} leaks past the backend seam: {exc}")
    assert len(got_values) == len(want_values)
    for i, (got, want) in enumerate(zip(got_values, want_values)):
        _same(f"{op_name} output {i}", got, want)
    assert len(got_grads) == len(want_grads)
    for i, (got, want) in enumerate(zip(got_grads, want_grads)):
        _same(f"{op_name} gradient of input {i}", got, want)
    if case.grad and OPS[op_name].differentiable:  # and against finite differences, there
        assert dj.autograd.gradcheck(case.fn, _inputs(case, wrapped=True), **case.tol)


def test_backend_of_follows_the_array_type():
    assert backend_of(np.zeros(2)) is numpy_backend
    assert backend_of(np.float32(1.0)) is numpy_backend
    assert backend_of(3.0) is numpy_backend
    assert backend_of(WArray(np.zeros(2))) is wrapped_backend
    with pytest.raises(dj.errors.DongjingError, match="no dongjing backend"):
        backend_of(_Foreign())


class _Foreign:
    shape = (2,)
    dtype = np.dtype(np.float64)


def test_wrapped_arrays_refuse_numpy():
    w = WArray(np.ones(3))
    with pytest.raises(LeakError):
        np.sum(w)
    with pytest.raises(TypeError):
        np.add(w, 1.0)
    with pytest.raises(LeakError):
        np.asarray(w)


def test_backend_services_convert_between_backends():
    w = wrapped_backend.asarray(np.arange(3.0))
    assert type(w) is WArray
    back = numpy_backend.asarray(w)
    assert type(back) is np.ndarray and back.tolist() == [0.0, 1.0, 2.0]
    target = wrapped_backend.zeros((3,), np.float64)
    wrapped_backend.scatter_add(target, WArray(np.array([0, 0, 2])), WArray(np.ones(3)))
    assert unwrap(target).tolist() == [2.0, 0.0, 1.0]
    r = wrapped_backend.generator(5).random(2)
    assert type(r) is WArray and r.shape == (2,)


_PROBE = """
import ctypes, json
calls = []
class FakeLibc:
    def mallopt(self, *args):
        calls.append(args)
        return 1
ctypes.CDLL = lambda *a, **k: FakeLibc()
import dongjing
print(json.dumps(calls))
"""


@pytest.mark.parametrize("env", ["", "1"])
def test_import_never_retunes_the_allocator(env):
    """Eager buffers are reused by dongjing's own pool; the process's allocator is left alone,
    and DONGJING_KEEP_FREED_MEMORY is a no-op."""
    import json
    import os
    import subprocess
    import sys

    environ = {**os.environ, "DONGJING_KEEP_FREED_MEMORY": env}
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          check=True, env=environ)
    calls = json.loads(done.stdout.strip().splitlines()[-1])
    assert calls == []


def test_numpy_bound_ops_are_only_sources_effects_and_control():
    """Ops declared with `register` (a NumPy-bound forward) run on other backends through a
    host round trip; only graph sources, effects, control flow and random draws may be such."""
    bound = {n: op for n, op in OPS.items() if op.impl is None and op.ufunc_name is None}
    wrong = sorted(n for n, op in bound.items()
                   if str(op.kind) not in ("source", "effect", "control") and not op.random)
    assert not wrong, f"ops with a NumPy-bound forward that could be backend-generic: {wrong}"


def test_a_numpy_bound_op_runs_via_the_host():
    from dongjing.compat.v1.random_ops import _random
    from dongjing.dispatch import apply1

    x = dj.Tensor._make(WArray(np.zeros((2,))), False)
    out = apply1(_random, x, shape=(2,), dtype=np.dtype("float64"), dist="uniform", a=0.0,
                 b=1.0, rng=None)
    assert type(out._data) is WArray and out.shape == (2,)
