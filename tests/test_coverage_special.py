"""`dj.special` (torch.special's composable functions): values and gradients against PyTorch,
and torch-free checks."""

from __future__ import annotations

import numpy as np
import pytest
from torch_compare import compare, pos, r

import dongjing as dj

A = r(3, 4)
CALLS = [
    ("expit", (A * 3,), {}), ("exp2", (A,), {}), ("expm1", (A * 1e-3,), {}),
    ("log1p", (A * 0.4,), {}), ("logit", (pos(3, 4) * 0.4,), {}),
    ("logit", (pos(3, 4) * 0.45,), dict(eps=0.2)), ("logsumexp", (A * 5, 1), {}),
    ("logsumexp", (A, (0, 1), True), {}), ("log_softmax", (A, 1), {}), ("softmax", (A, 0), {}),
    ("round", (A * 10,), {}), ("round", (A * 10,), dict(decimals=1)),
    ("sinc", (np.array([0.0, 0.25, -1.5, 3.2]),), {}),
    ("xlogy", (np.array([0.0, 1.5, -2.0]), pos(3)), {}),
    ("xlog1py", (np.array([0.0, 1.5, -2.0, 0.7]), np.array([0.3, -0.5, 2.0, 1.0])), {}),
    ("erf", (A,), {}), ("ndtr", (A * 2,), {}),
    ("entr", (np.array([0.1, 0.3, 1.7, 2.5]),), {}),
]
TOLERANCE = {"erf": 2e-7, "ndtr": 2e-7}  # dongjing's erf: absolute error below 1.5e-7


@pytest.mark.parametrize("name,arrays,kwargs", CALLS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(CALLS)])
def test_special_equals_pytorch(name, arrays, kwargs):
    torch = pytest.importorskip("torch")
    tensors = [a for a in arrays if isinstance(a, np.ndarray)]
    rest = arrays[len(tensors):]
    atol = TOLERANCE.get(name, 1e-9)
    compare(lambda *t: getattr(dj.special, name)(*t, *rest, **kwargs),
            lambda *t: getattr(torch.special, name)(*t, *rest, **kwargs), tensors,
            rtol=1e-6 if atol == 1e-9 else 1e-5, atol=atol)


def test_entr_at_zero_and_below_equals_pytorch_in_value():
    torch = pytest.importorskip("torch")
    x = np.array([0.0, -1.0, 0.5])
    compare(dj.special.entr, torch.special.entr, [x], grad=False)
    t = dj.tensor(x, requires_grad=True)
    dj.special.entr(t).sum().backward()  # dongjing: 0 where PyTorch's formula gives inf / NaN
    np.testing.assert_allclose(t.grad.numpy(), [0.0, 0.0, -(1 + np.log(0.5))])


def test_special_by_hand_and_in_a_graph():
    np.testing.assert_allclose(dj.special.ndtr(dj.tensor([0.0])).numpy(), [0.5], atol=1e-7)
    np.testing.assert_allclose(dj.special.entr(dj.tensor([0.0, np.e])).numpy(), [0.0, -np.e],
                               rtol=1e-6)
    x = A.astype(np.float32)
    with dj.Graph() as g:
        p = dj.placeholder((None, 4))
        out = dj.special.xlog1py(p, p * p) + dj.special.entr(p * p)
    eager = (dj.special.xlog1py(dj.tensor(x), dj.tensor(x * x))
             + dj.special.entr(dj.tensor(x * x))).numpy()
    np.testing.assert_allclose(dj.Session(g, optimize=2).run(out, {p: x}), eager, rtol=1e-6)
