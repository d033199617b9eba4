"""Eager dispatch obeys each op's `infer` rule: for every op case and input dtype, the eager
result has the dtype (and shape) the graph builder infers, and both refuse the same inputs."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import CASES

import dongjing as dj
from dongjing import dtypes
from dongjing.core.registry import OPS
from dongjing.dispatch import apply, apply1
from dongjing.errors import DongjingError, DTypeError

DTYPES = [np.float32, np.float64, np.int64, np.bool_]


def _variant(case, dtype):
    """The case's inputs with every float input converted to `dtype` (an infinity cast to an
    integer dtype is whatever NumPy makes of it, silently)."""
    with np.errstate(invalid="ignore"):
        return [np.asarray(a).astype(dtype) if np.asarray(a).dtype.kind == "f"
                else np.asarray(a) for a in case.inputs]


def _params():
    for op_name, cases in sorted(CASES.items()):
        if OPS[op_name].kind in ("source", "effect", "control"):
            continue
        for i, case in enumerate(cases):
            for dtype in DTYPES:
                yield pytest.param(case, dtype, id=f"{op_name}-{i}-{np.dtype(dtype).name}")


def _run_eager(case, arrays):
    try:
        return case.fn(*[dj.tensor(a) for a in arrays]), None
    except DongjingError as exc:
        return None, exc


def _run_graph(case, arrays):
    with dj.Graph():
        xs = [dj.placeholder(a.shape, a.dtype) for a in arrays]
        try:
            return case.fn(*xs), None
        except DongjingError as exc:
            return None, exc


@pytest.mark.parametrize("case,dtype", list(_params()))
def test_eager_dtype_and_shape_follow_infer(case, dtype):
    arrays = _variant(case, dtype)
    with np.errstate(all="ignore"):
        eager, eager_error = _run_eager(case, arrays)
    graph, graph_error = _run_graph(case, arrays)
    assert (eager_error is None) == (graph_error is None), (eager_error, graph_error)
    if eager is None:
        assert type(eager_error) is type(graph_error)
        return
    assert eager.dtype == graph.dtype
    assert len(eager.shape) == len(graph.shape)
    # a None dim in the graph is data-dependent (a boolean mask)
    assert all(g is None or e == g for e, g in zip(eager.shape, graph.shape))


def test_a_float_only_op_refuses_integers_eagerly_as_infer_does():
    ints = dj.tensor([1, 2, 3])
    with pytest.raises(DTypeError, match="tanh"):
        apply1(OPS["tanh"], ints)
    assert dj.tanh(ints).dtype == dj.float32  # the public function promotes first


def test_a_forward_choosing_another_dtype_is_cast_to_the_rule():
    a, b = dj.tensor([1, 2], dtype=dj.int32), dj.tensor([3, 4], dtype=dj.int32)
    out = apply(OPS["div"], dj.tensor([1.0, 2.0]), dj.tensor([4.0, 8.0]))
    assert out.dtype == dj.float32
    assert (a + b).dtype == dj.int32


_ZERO_D_CASES = [  # (dimensioned dtype, 0-d dtype, PyTorch's result)
    ("float32", "float64", "float32"), ("int32", "int64", "int32"),
    ("int32", "float64", "float64"), ("bool", "int64", "int64"),
    ("uint8", "int64", "uint8"), ("float16", "float64", "float16"), ("int64", "bool", "int64"),
]


@pytest.mark.parametrize("shaped,zero_d,want", _ZERO_D_CASES)
def test_a_zero_d_tensor_does_not_raise_a_dimensioned_ones_dtype(shaped, zero_d, want):
    a = dj.ones(3, dtype=getattr(dj, shaped))
    b = dj.tensor(np.ones((), dtype=zero_d))
    assert (a + b).dtype == (b * a).dtype == np.dtype(want)
    g = dj.Graph()
    with g.as_default():
        p = dj.placeholder(getattr(dj, shaped), [None])
        q = dj.placeholder(getattr(dj, zero_d), [])
        assert (p - q).dtype == np.dtype(want)
        out = dj.Session(g).run(p - q, {p: np.ones(3, shaped), q: np.ones((), zero_d)})
    assert out.dtype == np.dtype(want)
    # both 0-d, or both dimensioned: the usual promotion
    both_0d = dj.tensor(np.ones((), shaped)) + b
    assert both_0d.dtype == dtypes.promote(np.dtype(shaped), np.dtype(zero_d))


def test_zero_d_rule_equals_pytorch():
    torch = pytest.importorskip("torch")
    for shaped, zero_d, _ in _ZERO_D_CASES:
        ta = torch.ones(3, dtype=getattr(torch, shaped))
        tb = torch.ones((), dtype=getattr(torch, zero_d))
        got = (dj.ones(3, dtype=getattr(dj, shaped)) + dj.tensor(np.ones((), zero_d))).dtype
        assert str(got) == str(ta.add(tb).dtype).removeprefix("torch.")
