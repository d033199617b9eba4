"""Registry-driven: every op of the op table runs in a graph (Session.run, interpreted and
compiled) and matches its eager result, and dj.gradients through it matches eager backward.
Cases come from tests/op_cases.py; an op without a case fails here."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import CASES, OWN_TESTS, case_params

import dongjing as dj
from dongjing.ops.registry import OPS


def _arrays(case):
    return [np.asarray(a) for a in case.inputs]


def _build(case, arrays):
    g = dj.Graph()
    with g.as_default():
        phs = [dj.placeholder(a.shape, a.dtype, name=f"in{i}") for i, a in enumerate(arrays)]
        out = case.fn(*phs)
    return g, phs, out


def test_every_op_has_a_graph_case():
    missing = [n for n, op in OPS.items() if op.kind not in OWN_TESTS and not CASES.get(n)]
    assert not missing, f"ops without a case in tests/op_cases.py: {missing}"


@pytest.mark.parametrize("level", [0, 1, 2], ids=["interpreted", "cleaned", "compiled"])
@pytest.mark.parametrize("op_name,case", list(case_params()))
def test_graph_matches_eager(op_name, case, level):
    arrays = _arrays(case)
    dj.manual_seed(3)  # random ops draw the same numbers in both modes
    eager = case.fn(*[dj.tensor(a) for a in arrays]).numpy()
    g, phs, out = _build(case, arrays)
    assert op_name in {n.op.name for n in g.nodes} or op_name == "count", (
        f"the case does not put {op_name!r} in the graph"
    )
    fits = len(out.shape) == eager.ndim and all(
        d is None or d == e for d, e in zip(out.shape, eager.shape))  # None: data-dependent
    assert fits and out.dtype == eager.dtype, (
        f"inferred {out.shape} {out.dtype}, eager gives {eager.shape} {eager.dtype}"
    )
    g.verify()
    dj.manual_seed(3)
    static = dj.Session(g, optimize=level).run(out, dict(zip(phs, arrays)))
    np.testing.assert_allclose(static, eager, rtol=1e-12, atol=0)
    assert static.dtype == eager.dtype


@pytest.mark.parametrize("op_name,case", [p for p in case_params()
                                          if p.values[1].grad and OPS[p.values[0]].differentiable])
@pytest.mark.parametrize("level", [0, 1, 2], ids=["interpreted", "cleaned", "compiled"])
def test_graph_gradients_match_eager_backward(op_name, case, level):
    arrays = _arrays(case)
    floats = [i for i, a in enumerate(arrays) if a.dtype.kind == "f"]
    tensors = [dj.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = case.fn(*tensors)
    cotangent = np.random.default_rng(5).standard_normal(out.shape).astype(out.dtype)
    out.backward(dj.tensor(cotangent))
    g, phs, sym = _build(case, arrays)
    with g.as_default():
        grads = dj.gradients(sym, [phs[i] for i in floats], grad_ys=dj.constant(cotangent))
    g.verify()
    fetch = [gr for gr in grads if gr is not None]
    values = iter(dj.Session(g, optimize=level).run(fetch, dict(zip(phs, arrays))))
    for i, gr in zip(floats, grads):
        expected = tensors[i].grad
        if gr is None:
            assert expected is None or not np.any(expected.numpy()), f"input {i}: no gradient"
            continue
        np.testing.assert_allclose(next(values), expected.numpy(), rtol=1e-10, atol=1e-12)


def test_cumprod_gradient_with_inf_and_nan_is_the_same_eagerly_and_in_graphs():
    # the exact (n, n) table rule everywhere a value is zero, inf or NaN; the short rule divides
    # by x (inf/inf = NaN), and the table's unused half must not leak inf * 0 = NaN
    xv = np.array([[np.inf, 2.0, 3.0, 0.5], [1.5, np.nan, 2.0, -1.0], [2.0, 0.5, -np.inf, 1.0]])
    w = np.arange(12.0).reshape(3, 4) - 5.0
    t = dj.tensor(xv, requires_grad=True)
    with np.errstate(all="ignore"):
        (want,) = dj.grad((dj.cumprod(t, 1) * w).sum(), [t])
        with dj.Graph() as g:
            x = dj.placeholder((3, 4), dj.float64, name="x")
            (gx,) = dj.gradients((dj.cumprod(x, 1) * w).sum(), [x])
        got = dj.Session(g, optimize=2).run(gx, {x: xv})
    np.testing.assert_array_equal(got, want.numpy())
    assert want.numpy()[0, 0] == w[0, 0] + w[0, 1] * 2 + w[0, 2] * 6 + w[0, 3] * 3  # finite
