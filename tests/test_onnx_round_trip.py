"""Round trips dongjing -> ONNX -> dongjing: every case of every exportable op
(tests/op_cases.py) is exported, imported back with dj.onnx.to_module and must give exactly
dongjing's eager result (same values, dtypes and shapes); so must a few whole models."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import CASES

import dongjing as dj
import dongjing.nn as nn
from dongjing.onnx.op_exports import rule_for
from dongjing.ops.registry import OPS

pytest.importorskip("onnx")


def _cases():
    for op_name, cases in sorted(CASES.items()):
        if rule_for(OPS[op_name])[0] is None:  # declared not exportable
            continue
        for i, case in enumerate(cases):
            yield pytest.param(op_name, case, id=f"{op_name}-{case.name or i}")


def _function_of(case, n: int):
    names = ", ".join(f"a{i}" for i in range(n))
    return eval(f"lambda {names}: fn({names})", {"fn": case.fn})  # noqa: S307 - fixed text


@pytest.mark.parametrize("op_name,case", list(_cases()))
def test_round_trip_is_exact(op_name, case):
    arrays = [np.asarray(a) for a in case.inputs]
    arrays = [a.astype(np.float32) if a.dtype.kind == "f" else a for a in arrays]
    tensors = [dj.tensor(a) for a in arrays]
    want = case.fn(*tensors)
    proto = dj.onnx.export(_function_of(case, len(arrays)), tuple(tensors))
    got = dj.onnx.to_module(proto)(*tensors)
    wants = list(want) if isinstance(want, (tuple, list)) else [want]
    gots = list(got) if isinstance(got, tuple) else [got]
    assert len(gots) == len(wants)
    for g, w in zip(gots, wants):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("build, shape", [
    (lambda: nn.Sequential(nn.Linear(4, 6), nn.LayerNorm(6), nn.GELU(), nn.Linear(6, 2)),
     (3, 4)),
    (lambda: nn.Sequential(nn.ELU(0.5), nn.SiLU(), nn.Upsample(scale_factor=2)), (1, 2, 3, 3)),
    (lambda: nn.Upsample(scale_factor=2, mode="bilinear"), (1, 2, 3, 3)),
    (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                              batch_first=True), 1),
     (2, 5, 8)),
])
def test_model_round_trip_is_exact(build, shape):
    dj.manual_seed(3)
    model = build().eval()
    x = dj.randn(*shape)
    imported = dj.onnx.to_module(dj.onnx.export(model, x))
    np.testing.assert_array_equal(imported(x).numpy(), model(x).numpy())
