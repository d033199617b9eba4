"""Every op-table case (and the layers that build constants of their own) on the fake "cuda"
device: results and gradients stay on the device and equal the CPU's, so no op or gradient rule
mixes in a host array (which a real GPU run would refuse with a DeviceError)."""

from __future__ import annotations

import numpy as np
import pytest
from fake_cuda import CArray, fake_cuda, host
from op_cases import as_list, case_inputs, case_params

import dongjing as dj
from dongjing import nn
from dongjing.nn import functional as F


@pytest.fixture(scope="module")
def cuda():
    with fake_cuda() as backend:
        yield backend



def _run(case, device: str):
    inputs = case_inputs(case, lambda a: dj.Tensor._make(a).to(device))
    outs = as_list(case.fn(*inputs))
    grads = []
    if case.grad and any(t.requires_grad for t in inputs):
        rng = np.random.default_rng(3)
        terms = [(o * dj.Tensor._make(rng.standard_normal(o.shape)).to(device)).sum()
                 for o in outs if o.requires_grad]
        if terms:
            sum(terms[1:], terms[0]).backward()
            grads = [t.grad for t in inputs]
    return outs, grads


@pytest.mark.parametrize("op_name,case", list(case_params()))
def test_op_on_the_device_matches_the_cpu(cuda, op_name, case):
    dj.manual_seed(0)
    want = _run(case, "cpu")
    dj.manual_seed(0)
    got = _run(case, "cuda")
    for kind, gots, wants in (("output", got[0], want[0]), ("gradient", got[1], want[1])):
        assert len(gots) == len(wants)
        for i, (g, w) in enumerate(zip(gots, wants)):
            if w is None:
                assert g is None
                continue
            assert type(g._data) is CArray, f"{op_name} {kind} {i} left the device"
            np.testing.assert_allclose(host(g), w.numpy(), rtol=1e-10, atol=1e-12)


LAYERS = [
    lambda: (nn.Embedding(6, 3, padding_idx=0), dj.tensor([[0, 2, 5]])),
    lambda: (nn.AdaptiveAvgPool2d((2, 3)), dj.randn(1, 2, 5, 7)),
    lambda: (nn.MaxPool2d(2, padding=1), dj.randn(1, 2, 5, 5)),
    lambda: (nn.Upsample(scale_factor=2, mode="bilinear"), dj.randn(1, 1, 3, 3)),
    lambda: (nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
             dj.randn(2, 4, 8)),
]


@pytest.mark.parametrize("make", LAYERS)
def test_layers_with_constants_run_on_the_device(cuda, make):
    dj.manual_seed(0)
    layer, x = make()
    want = layer(x)
    layer.to("cuda")
    got = layer(x.to("cuda"))
    assert type(got._data) is CArray
    np.testing.assert_allclose(host(got), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    if got.dtype.kind == "f" and any(p.requires_grad for p in layer.parameters()):
        got.sum().backward()
        assert all(p.grad is None or type(p.grad._data) is CArray for p in layer.parameters())


def test_reflect_padding_on_the_device(cuda):
    x = dj.randn(1, 1, 3, 3)
    want = F.pad(x, (1, 1, 2, 0), mode="reflect")
    got = F.pad(x.cuda(), (1, 1, 2, 0), mode="reflect")
    assert type(got._data) is CArray
    np.testing.assert_array_equal(host(got), want.numpy())


def test_causal_attention_on_the_device(cuda):
    q = dj.randn(1, 2, 4, 8)
    want = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    got = F.scaled_dot_product_attention(q.cuda(), q.cuda(), q.cuda(), is_causal=True)
    np.testing.assert_allclose(host(got), want.numpy(), rtol=1e-5, atol=1e-6)
