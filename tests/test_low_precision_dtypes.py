"""float16 and bfloat16 tensors: creation, casts, printing, promotion, save/load, computing in
float32 (NumPy alone would sum bfloat16 in bfloat16), gradients, and the error without
ml_dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing import dtypes
from dongjing.errors import DTypeError

BF16 = dj.bfloat16


def test_bfloat16_is_a_floating_dtype_with_its_own_name_and_limits():
    assert str(BF16) == "bfloat16" and dtypes.is_floating(BF16)
    assert dtypes.as_dtype("bfloat16") is BF16 and dtypes.as_dtype("torch.bfloat16") is BF16
    assert dtypes.short_name(BF16) == "bf16"
    info = dtypes.finfo(BF16)
    assert float(info.eps) == 2.0 ** -7 and float(info.max) > 3e38
    t = dj.tensor([1.5, 2.0], dtype=BF16)
    assert t.dtype == BF16 and t.is_floating_point() and t.element_size() == 2
    assert t.type() == "torch.BFloat16Tensor" and t.half().type() == "torch.HalfTensor"
    assert dj.zeros(2, dtype=BF16).dtype == BF16 and dj.ones(3).bfloat16().dtype == BF16


def test_casts_round_to_nearest_even_and_convert_back():
    x = dj.tensor([1.0, 1.00390625, 1.01171875, -2.5, 1e-3])
    b = x.to(BF16)
    np.testing.assert_array_equal(b.float().numpy(),
                                  np.array([1.0, 1.0, 1.015625, -2.5, 0.00099945068359375],
                                           dtype=np.float32))
    assert b.to(dj.float16).dtype == dj.float16 and b.to(dj.int64).tolist() == [1, 1, 1, -2, 0]
    assert b.tolist() == [1.0, 1.0, 1.015625, -2.5, 0.00099945068359375]
    assert b[2].item() == 1.015625


def test_printing_shows_the_values_in_four_digits_and_the_dtype():
    text = repr(dj.tensor([[1.23456, -2.5]]).bfloat16())
    assert text == "tensor([[ 1.2344, -2.5   ]], dtype=dongjing.bfloat16)"
    assert "dtype=dongjing.float16" in repr(dj.ones(2).half())
    assert f"{dj.tensor(1.25).bfloat16():.2f}" == "1.25"


@pytest.mark.parametrize("a,b,expected", [
    ("bfloat16", "float16", "float32"), ("bfloat16", "float32", "float32"),
    ("float16", "float32", "float32"), ("bfloat16", "float64", "float64"),
    ("bfloat16", "int64", "bfloat16"), ("float16", "int32", "float16"),
    ("bfloat16", "bool", "bfloat16"), ("bfloat16", "bfloat16", "bfloat16"),
])
def test_promotion_is_pytorchs(a, b, expected):
    x = dj.ones(2).to(getattr(dj, a)) if a != "bool" else dj.ones(2).bool()
    y = dj.ones(2).to(getattr(dj, b)) if b != "bool" else dj.ones(2).bool()
    assert str((x + y).dtype) == expected and str((y * x).dtype) == expected


def test_python_scalars_keep_the_16_bit_dtype():
    for dtype in (BF16, dj.float16):
        t = dj.ones(2).to(dtype)
        assert (t + 1).dtype == dtype and (t * 2.5).dtype == dtype and (1.5 / t).dtype == dtype
        assert (t > 0).dtype == dj.bool


def test_reductions_and_products_accumulate_in_float32():
    ones = dj.ones(4096).bfloat16()
    assert ones.sum().item() == 4096.0  # NumPy's own bfloat16 sum gives 256
    assert np.asarray(ones.numpy(), dtype=np.float32).sum() == 4096
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 64)).astype(np.float32)
    b = rng.standard_normal((64, 8)).astype(np.float32)
    for dtype in (BF16, dj.float16):
        ours = dj.tensor(a).to(dtype) @ dj.tensor(b).to(dtype)
        wide = dj.tensor(a).to(dtype).float() @ dj.tensor(b).to(dtype).float()
        np.testing.assert_array_equal(ours.numpy(), wide.to(dtype).numpy())
        assert ours.dtype == dtype


def test_gradients_flow_through_16_bit_tensors_and_casts():
    w = dj.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    x = dj.tensor([[1.0, 2.0]])
    y = (x.bfloat16() @ w.bfloat16()).float().sum()
    y.backward()
    assert w.grad.dtype == dj.float32
    np.testing.assert_array_equal(w.grad.numpy(), [[1.0, 1.0], [2.0, 2.0]])
    h = dj.tensor([1.0, 2.0], dtype=dj.float16, requires_grad=True)
    (h * h).sum().backward()
    assert h.grad.dtype == dj.float16 and h.grad.tolist() == [2.0, 4.0]


def test_save_and_load_keep_16_bit_tensors(tmp_path):
    path = tmp_path / "half.pt"
    state = {"b": dj.tensor([1.5, -2.25]).bfloat16(), "h": dj.tensor([0.1, 3.0]).half()}
    dj.save(state, path)
    loaded = dj.load(path)
    for key in state:
        assert loaded[key].dtype == state[key].dtype
        np.testing.assert_array_equal(loaded[key].float().numpy(), state[key].float().numpy())


def test_a_module_moves_to_bfloat16_and_runs():
    lin = dj.nn.Linear(3, 2).to(BF16)
    assert lin.weight.dtype == BF16
    out = lin(dj.ones(4, 3).bfloat16())
    assert out.dtype == BF16 and out.shape == (4, 2)


def test_session_and_jit_compute_16_bit_graphs_as_eager():
    rng = np.random.default_rng(3)
    av = rng.standard_normal((4, 5)).astype(np.float32)

    def f(a):
        b = a.bfloat16()
        return (b @ b.T).sum(dim=0) + b.exp().mean()

    eager = f(dj.tensor(av))
    g = dj.Graph()
    with g.as_default():
        a = dj.placeholder(dj.float32, [None, 5])
        out = f(a)
    for level in (0, 1, 2):
        got = dj.Session(g, optimize=level).run(out, {a: av})
        assert got.dtype == BF16
        np.testing.assert_array_equal(got, eager.numpy())
    np.testing.assert_array_equal(dj.jit(f)(dj.tensor(av)).numpy(), eager.numpy())


def test_without_ml_dtypes_bfloat16_raises_a_clear_error(monkeypatch):
    monkeypatch.setattr(dtypes, "bfloat16", None)
    with pytest.raises(DTypeError, match="pip install ml_dtypes"):
        dtypes.require_bfloat16()
    with pytest.raises(DTypeError, match="ml_dtypes"):
        dtypes.as_dtype("bfloat16")
    with pytest.raises(DTypeError, match="ml_dtypes"):
        dtypes.missing_attribute("bfloat16")


@pytest.mark.parametrize("dtype", [dj.float16, dj.bfloat16])
def test_cross_entropy_of_16_bit_logits_is_the_same_eagerly_and_in_a_graph(dtype):
    # the fused eager loss computed in 16 bits (0.0581 where float32 rounds to 0.05804)
    rng = np.random.default_rng(0)
    z = dj.tensor(rng.standard_normal((5, 3))).to(dtype).requires_grad_(True)
    zv, yv = z.detach().numpy(), rng.integers(0, 3, 5)
    loss = dj.nn.functional.cross_entropy(z, dj.tensor(yv))
    loss.backward()
    want = dj.nn.functional.cross_entropy(z.detach().float(), dj.tensor(yv))
    assert abs(loss.item() - want.item()) <= 2 * abs(want.item()) * dtypes.finfo(dtype).eps
    g = dj.Graph()
    with g.as_default():
        zp, yp = dj.placeholder(dtype, [None, 3]), dj.placeholder(dj.int64, [None])
        sym = dj.nn.functional.cross_entropy(zp, yp)
        grad = dj.gradients(sym, [zp])[0]
    for level in (0, 2):
        got = dj.Session(g, optimize=level).run([sym, grad], {zp: zv, yp: yv})
        np.testing.assert_array_equal(got[0], loss.numpy())
        np.testing.assert_array_equal(got[1], z.grad.numpy())
