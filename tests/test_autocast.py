"""dj.autocast without PyTorch: regions (nested, disabled, decorator, per device type), the op
lists, backward in the forward's dtypes, graph nodes cast while building, and eager ==
Session(optimize=0/1/2) == dj.jit for a small MLP, CNN and attention block."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dongjing as dj
from dongjing import short_paths
from dongjing.core import autocast_lists

F = dj.nn.functional
BF16 = dj.bfloat16


def test_products_run_in_the_region_dtype_and_losses_in_float32():
    a, b = dj.randn(3, 4), dj.randn(4, 2)
    with dj.autocast("cpu"):  # bfloat16 by default on the CPU
        assert dj.is_autocast_enabled("cpu") and dj.get_autocast_dtype("cpu") == BF16
        c = a @ b
        assert c.dtype == BF16
        assert F.linear(a, b.T).dtype == BF16
        assert F.softmax(c, dim=-1).dtype == BF16  # not on the CPU float32 list: input dtype
        assert F.mse_loss(c, c).dtype == dj.float32
        assert F.cross_entropy(c, dj.tensor([0, 1, 0])).dtype == dj.float32
        assert (c + a[:, :2]).dtype == dj.float32  # ordinary promotion
    assert not dj.is_autocast_enabled("cpu")
    assert (a @ b).dtype == dj.float32


def test_regions_nest_and_a_disabled_region_turns_autocast_off():
    a = dj.randn(2, 3)
    with dj.autocast("cpu", dtype=BF16):
        with dj.autocast("cpu", dtype=dj.float16):
            assert (a @ a.T).dtype == dj.float16
            with dj.autocast("cpu", enabled=False):
                assert (a @ a.T).dtype == dj.float32
                assert not dj.is_autocast_enabled("cpu")
            assert (a @ a.T).dtype == dj.float16
        assert (a @ a.T).dtype == BF16


def test_a_cuda_region_leaves_cpu_tensors_alone_and_float64_is_never_cast():
    a = dj.randn(2, 3)
    with dj.autocast("cuda"):
        assert dj.get_autocast_dtype("cuda") == dj.float16
        assert (a @ a.T).dtype == dj.float32
    with dj.autocast("cpu"):
        d = a.double()
        assert (d @ d.T).dtype == dj.float64


def test_the_decorator_form_and_the_cuda_amp_spelling():
    @dj.autocast("cpu")
    def product(x):
        return x @ x.T

    x = dj.randn(2, 3)
    assert product(x).dtype == BF16 and (x @ x.T).dtype == dj.float32
    region = dj.cuda.amp.autocast()
    assert region.device_type == "cuda" and region.fast_dtype == dj.float16
    assert dj.amp.autocast is dj.autocast


def test_bad_arguments_are_refused_or_warned_as_pytorch_does():
    with pytest.raises(ValueError, match="device_type"):
        dj.autocast("tpu")
    with pytest.raises(TypeError, match="device_type"):
        dj.autocast(0)
    with pytest.warns(UserWarning, match="Disabling autocast"):
        region = dj.autocast("cpu", dtype=dj.float64)
    with region:
        assert (dj.ones(2, 2) @ dj.ones(2, 2)).dtype == dj.float32


def test_op_lists_follow_pytorchs_per_device():
    assert autocast_lists.policy("cpu", "matmul") == autocast_lists.LOWER
    assert autocast_lists.policy("cuda", "conv2d") == autocast_lists.LOWER
    assert autocast_lists.policy("cpu", "exp") is None  # CPU keeps pointwise ops as they are
    assert autocast_lists.policy("cuda", "exp") == autocast_lists.FLOAT32
    assert autocast_lists.policy("cuda", "softmax") == autocast_lists.FLOAT32
    assert autocast_lists.policy("cpu", "cross_entropy") == autocast_lists.FLOAT32
    assert autocast_lists.policy("cuda", "cat") == autocast_lists.PROMOTE
    assert autocast_lists.policy("cpu", "relu") is None


def test_backward_runs_in_the_forward_dtypes_and_reaches_float32_leaves():
    w = dj.randn(4, 3, requires_grad=True)
    x = dj.randn(2, 4, requires_grad=True)
    with dj.autocast("cpu"):
        y = x @ w
        loss = (y.float() ** 2).sum()
        loss.backward()  # inside the region: the gradient ops are not autocast
    assert w.grad.dtype == dj.float32 and x.grad.dtype == dj.float32
    xb, wb = x.detach().bfloat16().float(), w.detach().bfloat16().float()
    yb = (xb @ wb).bfloat16().float()
    expected = (xb.T @ (2 * yb).bfloat16().float()).bfloat16().float()
    np.testing.assert_array_equal(w.grad.numpy(), expected.numpy())


def test_a_graph_built_in_a_region_holds_cast_nodes():
    lin = dj.nn.Linear(4, 3)
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, [None, 4])
        with dj.autocast("cpu"):
            y = lin(x)
    assert y.dtype == BF16
    text = str(g)
    assert "cast(%placeholder, dtype=bf16)" in text and "matmul" in text


def _mlp():
    return dj.nn.Sequential(dj.nn.Linear(6, 8), dj.nn.ReLU(), dj.nn.Linear(8, 3))


def _cnn():
    return dj.nn.Sequential(dj.nn.Conv2d(2, 3, 3, padding=1), dj.nn.ReLU(), dj.nn.MaxPool2d(2),
                            dj.nn.Flatten(), dj.nn.Linear(12, 3))


class _Attention(dj.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = dj.nn.LayerNorm(6)
        self.att = dj.nn.MultiheadAttention(6, 2, batch_first=True)
        self.out = dj.nn.Linear(6, 3)

    def forward(self, x):
        h = self.ln(x)
        a, _ = self.att(h, h, h, need_weights=False)
        return self.out((x + a).mean(dim=1))


MODELS = {"mlp": (_mlp, (4, 6)), "cnn": (_cnn, (2, 2, 4, 4)), "attention": (_Attention, (2, 3, 6))}


def _loss(model, x, y):
    with dj.autocast("cpu"):
        return F.cross_entropy(model(x), y)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_eager_session_and_jit_agree_bit_for_bit_under_autocast(name):
    make, shape = MODELS[name]
    dj.manual_seed(0)
    model = make()
    rng = np.random.default_rng(1)
    xv = rng.standard_normal(shape).astype(np.float32)
    yv = rng.integers(0, 3, shape[0])
    params = list(model.parameters())
    loss = _loss(model, dj.tensor(xv), dj.tensor(yv))
    loss.backward()
    eager = [loss.numpy()] + [p.grad.numpy().copy() for p in params]

    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(dj.float32, [None, *shape[1:]])
        y = dj.placeholder(dj.int64, [None])
        sym = _loss(model, x, y)
        grads = dj.gradients(sym, params)
    for level in (0, 1, 2):
        got = dj.Session(g, optimize=level).run([sym, *grads], {x: xv, y: yv})
        for a, b in zip(eager, got):
            np.testing.assert_array_equal(a, b, err_msg=f"optimize={level}")

    model.zero_grad()

    def step(x, y):
        out = _loss(model, x, y)
        out.backward()
        return out

    jitted = dj.jit(step)
    out = jitted(dj.tensor(xv), dj.tensor(yv))
    got = [out.numpy()] + [p.grad.numpy() for p in params]
    for a, b in zip(eager, got):
        np.testing.assert_array_equal(a, b)


def test_jit_traces_again_when_the_autocast_state_changes():
    lin = dj.nn.Linear(3, 2)
    f = dj.jit(lambda x: lin(x))
    x = dj.randn(2, 3)
    with dj.autocast("cpu"):
        assert f(x).dtype == BF16
    assert f(x).dtype == dj.float32
    with dj.autocast("cpu"):
        assert f(x).dtype == BF16
    assert f.cache_size == 2
    module = dj.jit(lin)
    with dj.autocast("cpu"):
        assert module(x).dtype == BF16
    assert module(x).dtype == dj.float32


def test_autocast_regions_are_per_thread():
    import threading

    seen = []
    a = dj.randn(2, 2)

    def other():
        seen.append((a @ a).dtype)

    with dj.autocast("cpu"):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert (a @ a).dtype == BF16
    assert seen == [dj.float32]


def test_16_bit_ops_match_with_and_without_the_short_paths():
    rng = np.random.default_rng(2)
    for dtype in (BF16, dj.float16):
        a = dj.tensor(rng.standard_normal((5, 7)).astype(np.float32)).to(dtype)
        b = dj.tensor(rng.standard_normal((7, 3)).astype(np.float32)).to(dtype)

        def run(a, b):
            return [a @ b, a.sum(), a.exp(), a * 2, a + a, a.mean(dim=0), F.softmax(a, -1)]

        fast = run(a, b)
        with short_paths.disabled():
            slow = run(a, b)
        for x, y in zip(fast, slow):
            assert x.dtype == y.dtype == dtype
            np.testing.assert_array_equal(x.float().numpy(), y.float().numpy())


def test_no_warning_when_autocast_is_off():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with dj.autocast("cpu", enabled=False):
            assert (dj.ones(2, 2) @ dj.ones(2, 2)).dtype == dj.float32
