"""Mixed precision against PyTorch: autocast's dtypes per op, and a small MLP, CNN and attention
block under CPU bfloat16 autocast (values and gradients within PyTorch's bfloat16 tolerances),
dtype promotion, and a GradScaler training run."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj

torch = pytest.importorskip("torch")
F, TF = dj.nn.functional, torch.nn.functional

BF16_RTOL = 1.6e-2  # torch.testing's default for bfloat16


def _close(ours, theirs, scale=1.0):
    """Within PyTorch's bfloat16 tolerance, the absolute part relative to the values' size."""
    ours = np.asarray(ours.detach().float().numpy() if hasattr(ours, "detach") else ours,
                      dtype=np.float32)
    theirs = theirs.detach().float().numpy()
    atol = BF16_RTOL * max(float(np.abs(theirs).max()), 1e-6) * scale
    np.testing.assert_allclose(ours, theirs, rtol=BF16_RTOL, atol=atol)


def _dtype_name(t) -> str:
    return str(t.dtype).replace("torch.", "").replace("dongjing.", "")


_RNG = np.random.default_rng(0)
_A = _RNG.standard_normal((2, 3, 4)).astype(np.float32)
_B = _RNG.standard_normal((2, 4, 5)).astype(np.float32)
_M = _RNG.standard_normal((3, 4)).astype(np.float32)
_W = _RNG.standard_normal((5, 4)).astype(np.float32)
_IMG = _RNG.standard_normal((1, 2, 5, 5)).astype(np.float32)
_K = _RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)
_T = _RNG.integers(0, 4, 3)

# (name, dongjing call, torch call) on float32 inputs: the result's dtype under autocast
CASES = [
    ("matmul", lambda m, a, b: m.matmul(a(_A), a(_B)), None),
    ("@", lambda m, a, b: a(_A) @ a(_B), None),
    ("bmm", lambda m, a, b: m.bmm(a(_A), a(_B)), None),
    ("mm", lambda m, a, b: m.mm(a(_M), a(_W).T), None),
    ("addmm", lambda m, a, b: m.addmm(a(_M[:, :3]), a(_M), a(_M).T), None),
    ("linear", lambda m, a, b: b.linear(a(_M), a(_W), a(_W[:, 0])), None),
    ("conv2d", lambda m, a, b: b.conv2d(a(_IMG), a(_K), a(_K[:, 0, 0, 0])), None),
    ("einsum", lambda m, a, b: m.einsum("bij,bjk->bik", a(_A), a(_B)), None),
    ("sdpa", lambda m, a, b: b.scaled_dot_product_attention(a(_A), a(_A), a(_A)), None),
    ("softmax", lambda m, a, b: b.softmax(a(_M), dim=-1), None),
    ("log_softmax", lambda m, a, b: b.log_softmax(a(_M), dim=-1), None),
    ("layer_norm", lambda m, a, b: b.layer_norm(a(_M), (4,)), None),
    ("exp", lambda m, a, b: m.exp(a(_M)), None),
    ("sum", lambda m, a, b: a(_M).sum(), None),
    ("relu", lambda m, a, b: b.relu(a(_M)), None),
    ("prod", lambda m, a, b: m.prod(a(_M)), None),
    ("cumsum", lambda m, a, b: m.cumsum(a(_M), 0), None),
    ("cross_entropy", lambda m, a, b: b.cross_entropy(a(_M), m.tensor(_T)), None),
    ("nll_loss", lambda m, a, b: b.nll_loss(a(_M), m.tensor(_T)), None),
    ("mse_loss", lambda m, a, b: b.mse_loss(a(_M), a(_M) * 2), None),
    ("l1_loss", lambda m, a, b: b.l1_loss(a(_M), a(_M) * 2), None),
    ("smooth_l1_loss", lambda m, a, b: b.smooth_l1_loss(a(_M), a(_M) * 2), None),
    ("kl_div", lambda m, a, b: b.kl_div(a(_M), a(_M) * a(_M), reduction="batchmean"), None),
    ("bce_with_logits", lambda m, a, b: b.binary_cross_entropy_with_logits(a(_M), a(_M) * 0),
     None),
    ("mm then add", lambda m, a, b: m.mm(a(_M), a(_W).T) + a(_W[:, 0]), None),
    ("cat", lambda m, a, b: m.cat([m.mm(a(_M), a(_M).T), a(_M[:, :3])]), None),
    ("stack", lambda m, a, b: m.stack([m.mm(a(_M), a(_M).T), a(_M[:, :3])]), None),
]


@pytest.mark.parametrize("name,call,_", CASES, ids=[c[0] for c in CASES])
def test_result_dtypes_under_cpu_autocast_are_pytorchs(name, call, _):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        theirs = call(torch, torch.tensor, TF)
    with dj.autocast("cpu", dtype=dj.bfloat16):
        ours = call(dj, dj.tensor, F)
    assert _dtype_name(ours) == _dtype_name(theirs)
    _close(ours, theirs, scale=0.5)


@pytest.mark.parametrize("name,call,_", CASES[:9], ids=[c[0] for c in CASES[:9]])
def test_float16_autocast_dtypes_on_the_cpu_are_pytorchs(name, call, _):
    with torch.autocast("cpu", dtype=torch.float16):
        theirs = call(torch, torch.tensor, TF)
    with dj.autocast("cpu", dtype=dj.float16):
        ours = call(dj, dj.tensor, F)
    assert _dtype_name(ours) == _dtype_name(theirs)
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=1e-3,
                               atol=1e-3 * float(theirs.float().abs().max()))


def test_promotion_between_16_bit_and_other_dtypes_is_pytorchs():
    names = ["bfloat16", "float16", "float32", "float64", "int64", "int32", "bool"]
    for x in names:
        for y in names:
            t = torch.ones(2, dtype=getattr(torch, x)) + torch.ones(2, dtype=getattr(torch, y))
            ours = (dj.ones(2).to(getattr(dj, x if x != "bool" else "bool"))
                    + dj.ones(2).to(getattr(dj, y)))
            assert _dtype_name(ours) == _dtype_name(t), (x, y)
    for scalar in (2, 2.5, True):
        for x in ("bfloat16", "float16"):
            t = torch.ones(2, dtype=getattr(torch, x)) * scalar
            assert _dtype_name(dj.ones(2).to(getattr(dj, x)) * scalar) == _dtype_name(t)


def test_bfloat16_casts_round_as_pytorchs():
    values = np.array([1.0, 1.00390625, 1.005859375, -3.14159, 1e-30, 65504.0, 3e38, np.inf,
                       -np.inf], dtype=np.float32)
    ours = dj.tensor(values).bfloat16().float().numpy()
    theirs = torch.tensor(values).bfloat16().float().numpy()
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(dj.tensor(values).half().float().numpy(),
                                  torch.tensor(values).half().float().numpy())


def _copy_weights(theirs, ours):
    ours.load_state_dict({k: dj.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})


def _compare_under_autocast(tmodel, dmodel, x, tloss, dloss):
    _copy_weights(tmodel, dmodel)
    xt = torch.tensor(x, requires_grad=True)
    xd = dj.tensor(x, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        tout = tmodel(xt)
        tl = tloss(tout)
    tl.backward()
    with dj.autocast("cpu", dtype=dj.bfloat16):
        dout = dmodel(xd)
        dl = dloss(dout)
    dl.backward()
    assert _dtype_name(dout) == _dtype_name(tout) and _dtype_name(dl) == _dtype_name(tl)
    _close(dout, tout)
    assert abs(dl.item() - tl.item()) <= BF16_RTOL * abs(tl.item())
    _close(xd.grad, xt.grad)
    for (name, tp), dp in zip(tmodel.named_parameters(), dmodel.parameters()):
        assert dp.grad.dtype == dj.float32, name
        _close(dp.grad, tp.grad)


def test_mlp_values_and_gradients_match_pytorch_autocast():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    dm = dj.nn.Sequential(dj.nn.Linear(8, 16), dj.nn.ReLU(), dj.nn.Linear(16, 4))
    x = _RNG.standard_normal((6, 8)).astype(np.float32)
    y = _RNG.integers(0, 4, 6)
    _compare_under_autocast(tm, dm, x, lambda o: TF.cross_entropy(o, torch.tensor(y)),
                            lambda o: F.cross_entropy(o, dj.tensor(y)))


def test_cnn_values_and_gradients_match_pytorch_autocast():
    torch.manual_seed(1)
    tm = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.ReLU(),
                             torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(16, 3))
    dm = dj.nn.Sequential(dj.nn.Conv2d(2, 4, 3, padding=1), dj.nn.ReLU(), dj.nn.MaxPool2d(2),
                          dj.nn.Flatten(), dj.nn.Linear(16, 3))
    x = _RNG.standard_normal((2, 2, 4, 4)).astype(np.float32)
    y = np.array([0, 2])
    _compare_under_autocast(tm, dm, x, lambda o: TF.cross_entropy(o, torch.tensor(y)),
                            lambda o: F.cross_entropy(o, dj.tensor(y)))


def _attention_block(nn, Fn):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(8)
            self.att = nn.MultiheadAttention(8, 2, batch_first=True)
            self.ff = nn.Linear(8, 8)

        def forward(self, x):
            h = self.ln(x)
            a, _ = self.att(h, h, h, need_weights=False)
            x = x + a
            return x + Fn.gelu(self.ff(x))

    return Block()


def test_attention_block_values_and_gradients_match_pytorch_autocast():
    torch.manual_seed(2)
    tm, dm = _attention_block(torch.nn, TF), _attention_block(dj.nn, F)
    x = _RNG.standard_normal((2, 5, 8)).astype(np.float32)
    _compare_under_autocast(tm, dm, x, lambda o: (o.float() ** 2).mean(),
                            lambda o: (o.float() ** 2).mean())


def test_grad_scaler_with_autocast_trains_as_pytorch():
    torch.manual_seed(3)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    dm = dj.nn.Sequential(dj.nn.Linear(4, 8), dj.nn.Tanh(), dj.nn.Linear(8, 3))
    _copy_weights(tm, dm)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1)
    dopt = dj.optim.SGD(dm.parameters(), lr=0.1)
    ts = torch.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=2)
    ds = dj.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=2)
    for step, factor in enumerate([1.0, 1.0, float("inf"), 1.0, 1.0]):
        x = _RNG.standard_normal((5, 4)).astype(np.float32)
        y = _RNG.integers(0, 3, 5)
        topt.zero_grad()
        dopt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            tl = TF.cross_entropy(tm(torch.tensor(x)), torch.tensor(y)) * factor
        with dj.autocast("cpu", dtype=dj.bfloat16):
            dl = F.cross_entropy(dm(dj.tensor(x)), dj.tensor(y)) * factor
        ts.scale(tl).backward()
        ds.scale(dl).backward()
        ts.step(topt)
        ds.step(dopt)
        ts.update()
        ds.update()
        assert ds.get_scale() == ts.get_scale(), step
        for tp, dp in zip(tm.parameters(), dm.parameters()):
            _close(dp, tp, scale=0.1)
