"""Registry-driven export check: every case of every exportable op (tests/op_cases.py) is
exported to ONNX and run in onnxruntime, which must agree with dongjing's eager result."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import CASES

import dongjing as dj
from dongjing.onnx.op_exports import rule_for
from dongjing.ops.registry import OPS

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


def _cases():
    for op_name, cases in sorted(CASES.items()):
        if rule_for(OPS[op_name])[0] is None:  # declared not exportable
            continue
        for i, case in enumerate(cases):
            yield pytest.param(op_name, case, id=f"{op_name}-{case.name or i}")


def _function_of(case, n: int):
    """`case.fn` as a function of exactly n positional tensors (export names them a0, a1...)."""
    names = ", ".join(f"a{i}" for i in range(n))
    return eval(f"lambda {names}: fn({names})", {"fn": case.fn})  # noqa: S307 - fixed text


@pytest.mark.parametrize("op_name,case", list(_cases()))
def test_exported_case_matches_onnxruntime(op_name, case):
    arrays = [np.asarray(a) for a in case.inputs]  # floats as float32, as models run
    arrays = [a.astype(np.float32) if a.dtype.kind == "f" else a for a in arrays]
    tensors = [dj.tensor(a) for a in arrays]
    want = case.fn(*tensors)
    proto = dj.onnx.export(_function_of(case, len(arrays)), tuple(tensors))
    feeds = {i.name: t.numpy() for i, t in zip(proto.graph.input, tensors)}
    outs = dj.onnx.run_onnxruntime(proto, feeds)
    wants = list(want) if isinstance(want, (tuple, list)) else [want]
    for got, expected in zip(outs, wants):
        assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
        np.testing.assert_allclose(got, expected.numpy(), rtol=1e-5, atol=1e-5)
